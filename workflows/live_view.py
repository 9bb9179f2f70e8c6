"""The model activity's short cut to its view when the workflow runs in the same process.

A model call reads its agent's view of the transcript from the workflow (so the transcript never
enters history as activity input). Across processes that read is a query: a round trip through
the server and a workflow activation, about a third of a model call's overhead at load. When the
activity runs in the worker process that holds the conversation's workflow in its cache (the
common case with one worker), it can read the same view from that workflow's state directly.

Why this is exact, not a cache that can go stale: within one workflow run the log and the
shared list only ever grow at their ends (the rule `Transcript` keeps), and every workflow
instance of a run (the cached one, one evicted earlier, one replaying) holds a prefix of the
same deterministic state. A request names the log length and shared length it was scheduled
with, so a view built from `log[:transcript_length]` and `shared[:shared_length]` is the view
the query would return whenever both prefixes exist; otherwise the caller queries. The workflow
only registers itself (a weak reference: nothing is kept alive for this); it never reads
anything here, so replay and determinism are untouched. Reads happen on the activity's thread
while a workflow activation may append on another (`Transcript.prefix` says why that is safe).
"""

from __future__ import annotations

import weakref
from typing import Protocol

from . import roster
from .messages import ModelRequest, ModelView, TeamSpec
from .transcript import Transcript


class _State(Protocol):
    @property
    def transcript(self) -> Transcript: ...


class LiveConversation(Protocol):
    """What is read of a workflow instance: `TeamWorkflow` has both."""

    @property
    def team(self) -> TeamSpec | None: ...

    @property
    def state(self) -> _State: ...


_LIVE: weakref.WeakValueDictionary[tuple[str, str], LiveConversation] = weakref.WeakValueDictionary()


def register(workflow_id: str, run_id: str, conversation: LiveConversation) -> None:
    """Called by the workflow when an instance is created (again on every replay: harmless)."""
    _LIVE[(workflow_id, run_id)] = conversation


def read(req: ModelRequest) -> ModelView | None:
    """The view `req` asks for, from the workflow instance in this process, or None when there
    is none here or it does not yet hold what the request was scheduled with."""
    if req.shared_length is None:
        return None
    conversation = _LIVE.get((req.workflow_id, req.run_id))
    team = conversation.team if conversation is not None else None
    if conversation is None or team is None:
        return None
    snapshot = conversation.state.transcript.prefix(req.transcript_length, req.shared_length)
    if snapshot is None or (req.agent_run and req.agent_run not in snapshot.runs):
        return None
    messages = snapshot.view(req.agent_run, req.transcript_length, handoffs=roster.handoff_view(team))
    return ModelView(messages=messages, tools=roster.agent_tools(team, req.agent), in_process=True)
