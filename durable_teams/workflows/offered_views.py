"""The model activity's short cut to its view when the workflow runs in the same process.

A model call reads its agent's view of the transcript from the workflow, so the transcript never
enters history as activity input. The workflow builds that view when it schedules the call
(workflows/agent_loop.py: it needs it anyway, for the call's summary) and offers it here for as
long as the call is in flight. An activity running in the worker process that holds the workflow
(always so for a local activity; for a regular one see workflows/placement.py) takes the view as
built: no second build, no query. Anywhere else, or after the workflow left this worker's cache,
it reads the view by query (activities/view_cache.py).

Offering never changes what the workflow does: its code never reads anything back from here, so
replay and determinism are untouched (a replayed instance offers again the views of the calls it
still awaits). Each view is a new list, never changed after it is offered, and a dict lookup is
atomic under the GIL, so the activity reads it on its own thread while the workflow runs on
another.
"""

from __future__ import annotations

import weakref

from .messages import Message, ModelRequest, ModelView, ToolSpec


class OfferedViews:
    """The views of one workflow instance's model calls in flight, by (agent run, log length
    when scheduled): what a `ModelRequest` names."""

    def __init__(self) -> None:
        self._views: dict[tuple[int, int], tuple[list[Message], list[ToolSpec]]] = {}

    def offer(self, agent_run: int, upto: int, messages: list[Message], tools: list[ToolSpec]) -> None:
        self._views[(agent_run, upto)] = (messages, tools)

    def withdraw(self, agent_run: int, upto: int) -> None:
        self._views.pop((agent_run, upto), None)

    def get(self, agent_run: int, upto: int) -> tuple[list[Message], list[ToolSpec]] | None:
        return self._views.get((agent_run, upto))

    def __len__(self) -> int:
        return len(self._views)


_LIVE: weakref.WeakValueDictionary[tuple[str, str], OfferedViews] = weakref.WeakValueDictionary()
"""(workflow id, run id) -> the views its instance in this process offers; held weakly, so
they go with the instance (evicted, or the run ended)."""


def register(workflow_id: str, run_id: str) -> OfferedViews:
    """Called by the workflow when an instance is created (again on every replay: the newest
    instance's views are the ones read). The instance keeps what this returns."""
    offered = OfferedViews()
    _LIVE[(workflow_id, run_id)] = offered
    return offered


def read(req: ModelRequest) -> ModelView | None:
    """The view `req` asks for, as its workflow instance in this process offers it, or None."""
    offered = _LIVE.get((req.workflow_id, req.run_id))
    found = offered.get(req.agent_run, req.transcript_length) if offered is not None else None
    if found is None:
        return None
    messages, tools = found
    return ModelView.model_construct(messages=messages, tools=tools, in_process=True)
