"""Search attributes that tell conversations apart in lists: `Team` and `Task` (the first words
of the task). The Web UI shows them as columns and filters on them (`Team = "faang"`).

Clients set them when they start a conversation; the workflow sets `Team` itself when it is
missing (a raw `temporal workflow start`, a nested team's child workflow). Search attributes are
indexed in clear, never encrypted: `Task` holds the user's words, so a client with encryption
configured leaves it out, and the workflow (which cannot tell whether its input came encrypted)
never sets it.

Not every namespace has these attributes (a managed one, or one set up by an older release), and
a workflow task that upserts an unknown one is refused on every retry. So a conversation asks the
worker which exist (the `available_labels` activity, durable_teams/worker/search_attributes.py)
before it sets one, and the answer is recorded in its history.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import (
    RetryPolicy,
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
)
from temporalio.exceptions import ActivityError

TEAM = SearchAttributeKey.for_keyword("Team")
TASK = SearchAttributeKey.for_keyword("Task")
AVAILABLE_LABELS_ACTIVITY = "available_labels"
TASK_WORDS = 80
"""Characters of the task kept: a list column, not the task (which can be long or private)."""


def task_words(task: str | None) -> str:
    """The first words of `task`, whitespace collapsed, cut at TASK_WORDS characters."""
    words = " ".join((task or "").split())
    return words[:TASK_WORDS - 3] + "..." if len(words) > TASK_WORDS else words


def static_summary(team: str, task: str | None) -> str:
    """The Web UI's line for a conversation (its static summary): its team and the first
    words of its task."""
    return f"{team}: {task_words(task) or 'chat'}"


def label_pairs(team: str, task: str | None) -> list[SearchAttributePair[str]]:
    """`Team` and, when there is a task, `Task`."""
    pairs = [SearchAttributePair(TEAM, team)]
    if task_words(task):
        pairs.append(SearchAttributePair(TASK, task_words(task)))
    return pairs


def conversation_labels(team: str, task: str | None, encrypted: bool) -> TypedSearchAttributes:
    """For `start_workflow(search_attributes=...)`; no `Task` when payloads are `encrypted`."""
    return TypedSearchAttributes(label_pairs(team, None if encrypted else task))


async def available_labels() -> frozenset[str]:
    """From workflow code: the labels the worker found in the namespace, as recorded in history.
    A worker without the activity (or one failing) answers none: a missing label costs a list
    column, an upsert of an unknown one would wedge the conversation. A regular activity, not a
    local one: a command made right after a local activity resolves can replay in another
    workflow task than it ran (temporalio 1.35), which the update state machine refuses."""
    try:
        names = await workflow.execute_activity(
            AVAILABLE_LABELS_ACTIVITY, result_type=list[str],
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=2), summary="available labels")
    except ActivityError as err:
        workflow.logger.warning("No labels set: the worker could not say which exist (%s)", err)
        return frozenset()
    return frozenset(names)


async def label_at_start(team: str) -> frozenset[str] | None:
    """Upsert `Team` when the starter did not set it and the namespace has it. Returns the
    labels the worker named, or None when the starter had set it (nothing asked)."""
    if workflow.info().typed_search_attributes.get(TEAM) is not None:
        return None
    known = await available_labels()
    if TEAM.name in known:
        workflow.upsert_search_attributes([TEAM.value_set(team)])
    return known
