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
while a workflow activation may append on another: they read only below the lengths the request
names, after checking the lists hold that much (a length read, a slice and an index are atomic
under the GIL), and list items are never replaced.

Each instance's views are built incrementally (workflows/view_builder.py: O(new messages) per
call, not O(transcript)), by a `ViewBuilder` that lives as long as the instance does.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from . import roster
from .messages import ModelRequest, ModelView, TeamSpec
from .transcript import Transcript
from .view_builder import ViewBuilder


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
_BUILDERS: dict[tuple[str, str], tuple[weakref.ref[LiveConversation], ViewBuilder]] = {}
"""The instance's view builder, dropped with the instance: the activities' own, the workflow
never sees them."""


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
    transcript = conversation.state.transcript
    if len(transcript.log) < req.transcript_length or len(transcript.shared) < req.shared_length:
        return None
    if req.agent_run and transcript.run(req.agent_run) is None:
        return None
    messages = _builder(req, conversation).view(transcript, req.agent_run, req.transcript_length, req.shared_length,
                            roster.handoff_view(team))
    return ModelView(messages=messages, tools=roster.agent_tools(team, req.agent), in_process=True)


def _builder(req: ModelRequest, conversation: LiveConversation) -> ViewBuilder:
    """This instance's builder: a new one for a new instance (after an eviction and replay)."""
    key = (req.workflow_id, req.run_id)
    found = _BUILDERS.get(key)
    if found is not None and found[0]() is conversation:
        return found[1]

    def forget(ref: weakref.ref[LiveConversation]) -> None:  # when the instance is collected
        if _BUILDERS.get(key, (None,))[0] is ref:
            _BUILDERS.pop(key, None)

    builder = ViewBuilder()
    _BUILDERS[key] = (weakref.ref(conversation, forget), builder)
    return builder
