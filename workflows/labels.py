"""Search attributes that tell conversations apart in lists: `Team` and `Task` (the first words
of the task). The Web UI shows them as columns and filters on them (`Team = "faang"`).

Clients set them when they start a conversation; the workflow sets `Team` itself when it is
missing (a raw `temporal workflow start`, a nested team's child workflow). Search attributes are
indexed in clear, never encrypted: `Task` holds the user's words, so a client with encryption
configured leaves it out, and the workflow (which cannot tell whether its input came encrypted)
never sets it.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

TEAM = SearchAttributeKey.for_keyword("Team")
TASK = SearchAttributeKey.for_keyword("Task")
LABELS_PATCH = "team-task-search-attributes"
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


def label_if_missing(team: str) -> None:
    """From workflow code: upsert `Team` when the starter did not set it. Guarded by a patch:
    a history recorded before this replays without the extra command."""
    if workflow.info().typed_search_attributes.get(TEAM) is not None:
        return
    if workflow.patched(LABELS_PATCH):
        workflow.upsert_search_attributes([TEAM.value_set(team)])
