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
before it sets one, and the answer is recorded in its history. A history recorded before this
(patch `ASK_PATCH`) replays its upserts as they were.
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
LABELS_PATCH = "team-task-search-attributes"
ASK_PATCH = "labels-ask-first"
"""Asked once at the start of each run: this run asks which labels exist before it sets one
(`Team` at the start, `AwaitingHuman` at its first question). A run begun before the upgrade
keeps upserting as it did (the attributes it set then existed); its next run asks."""
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


BY_ACTIVITY_PATCH = "labels-asked-by-activity"
"""Runs begun by this code ask with a regular activity: a command made right after a local
activity resolves can replay in another workflow task than it ran (temporalio 1.35), which
the update and patch state machines refuse. Runs recorded before keep the local activity."""


async def available_labels(by_activity: bool = False) -> frozenset[str]:
    """From workflow code: the labels the worker found in the namespace, as recorded in history.
    A worker without the activity (or one failing) answers none: a missing label costs a list
    column, an upsert of an unknown one would wedge the conversation."""
    run = workflow.execute_activity if by_activity else workflow.execute_local_activity
    try:
        names = await run(  # type: ignore[operator]
            AVAILABLE_LABELS_ACTIVITY, result_type=list[str],
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=2), summary="available labels")
    except ActivityError as err:
        workflow.logger.warning("No labels set: the worker could not say which exist (%s)", err)
        return frozenset()
    return frozenset(names)


async def label_at_start(team: str, ask: bool, by_activity: bool = False) -> frozenset[str] | None:
    """Upsert `Team` when the starter did not set it and the namespace has it (`ask`: this run
    asks, see ASK_PATCH). Returns the labels the worker named, or None when it was not asked."""
    if ask:
        if workflow.info().typed_search_attributes.get(TEAM) is not None:
            return None
        known = await available_labels(by_activity)
        if TEAM.name in known:
            workflow.upsert_search_attributes([TEAM.value_set(team)])
        return known
    label_if_missing(team)
    return None


def label_if_missing(team: str) -> None:
    """From workflow code: upsert `Team` when the starter did not set it. Guarded by a patch:
    a history recorded before this replays without the extra command."""
    if workflow.info().typed_search_attributes.get(TEAM) is not None:
        return
    if workflow.patched(LABELS_PATCH):
        workflow.upsert_search_attributes([TEAM.value_set(team)])
