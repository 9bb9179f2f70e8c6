"""A thread read for the LangGraph door: its team, state and conversation, as one snapshot
from the workflow (every answer is read when asked: nothing is kept in the gateway), and the
runs (turns) it holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowQueryFailedError

from durable_teams.client.checkpoints import list_checkpoints
from durable_teams.client.replay_state import ReplayFailed
from durable_teams.gateway.core.tenant_ids import shown
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    NotFound,
    RunRef,
    run_object,
    run_status,
    thread_object,
    thread_status,
    values_of,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

METADATA_CLIENT = "langgraph"
METADATA_MEMO = f"{METADATA_CLIENT}_metadata"
"""The memo key of the metadata a LangGraph client gave the thread when creating it, and
updated since (`TeamWorkflow.set_client_metadata`)."""
ENDED_BADLY = {WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.TIMED_OUT,
               WorkflowExecutionStatus.TERMINATED}


@dataclass
class Snapshot:
    """A thread as read now."""

    thread: str
    team: str | None
    memo: Mapping[str, Any]
    created: datetime | None
    running: bool
    failed: bool
    status: ConversationStatus
    messages: list[Message]
    scope: str | None = None
    """The caller's scope: the thread is shown by its id within it (langgraph_tenancy.py)."""

    @property
    def shown(self) -> str:
        return shown(self.scope, self.thread)

    def values(self) -> dict[str, Any]:
        return values_of(self.messages)

    def state(self) -> str:
        return thread_status(self.status, self.running, self.failed)

    def as_thread(self) -> dict[str, Any]:
        metadata = self.memo.get(METADATA_MEMO)
        return thread_object(self.shown, self.team, self.created, metadata if isinstance(metadata, dict) else {},
                             self.state(), self.values(), self.status.pending)


async def snapshot(gw: Gateway, thread: str, scope: str | None) -> Snapshot:
    """The thread as a caller of `scope` sees it (`ConversationNotFound`, 404, for another
    scope's thread as for none; `NoWorker`, 503, when no worker would answer its queries)."""
    described = await gw.visible(thread, scope)
    await gw.require_worker()
    handle = gw.client.get_workflow_handle(thread)
    status = await gw.status(thread)
    messages = await shared_of(handle)
    memo = await described.memo()
    team = memo.get("team")
    return Snapshot(thread, team if isinstance(team, str) else None, memo, described.start_time,
                    described.status == WorkflowExecutionStatus.RUNNING, described.status in ENDED_BADLY,
                    status, messages, scope)


async def conversation_after(gw: Gateway, thread: str, known: list[Message]) -> list[Message]:
    """The shared conversation: `known` (what was read of it before) and what came after it,
    in one query that reads only that (a worker of an earlier release: the whole of it)."""
    handle = gw.client.get_workflow_handle(thread)
    try:
        after: list[Message] = await handle.query(TeamWorkflow.transcript, args=[False, len(known), True])
    except WorkflowQueryFailedError:  # a worker of an earlier release: the whole of it
        return await shared_of(handle)
    return known + after


async def shared_of(handle: WorkflowHandle[Any, Any]) -> list[Message]:
    """The shared conversation, with what workers' tools wrote to their stream writers
    (`custom`; a worker of an earlier release: without them)."""
    try:
        found: list[Message] = await handle.query(TeamWorkflow.transcript, args=[False, 0, True])
    except WorkflowQueryFailedError:  # its query takes no `writes`
        found = await handle.query(TeamWorkflow.transcript, False)
    return found


async def reply_of(gw: Gateway, thread: str, turn: int) -> TurnReply | None:
    replies = await gw.client.get_workflow_handle(thread).query(
        TeamWorkflow.turn_replies, [turn])
    return replies[0] if replies else None


def turns_known(status: ConversationStatus) -> int:
    """The turns the thread has numbered: begun and queued."""
    return status.turns


async def known_run(gw: Gateway, seen: Snapshot, run: RunRef) -> None:
    """`NotFound` for a turn the thread never took, or a resume of a question still waiting
    or never answered while that turn ran (no answer started it)."""
    if run.turn > turns_known(seen.status):
        raise NotFound(f"no run {run.id} on thread {seen.thread}")
    if run.resumed is not None and any(q.question_id == run.resumed for q in seen.status.pending):
        raise NotFound(f"no run {run.id} on thread {seen.thread}: interrupt {run.resumed} waits for its answer")
    if run.resumed is not None and not await answered_in(gw, seen.thread, run):
        raise NotFound(f"no run {run.id} on thread {seen.thread}: no answer to an interrupt {run.resumed} "
                       f"of run t{run.turn} started one")


async def run_of(gw: Gateway, seen: Snapshot, run: RunRef) -> dict[str, Any]:
    """The run as LangGraph's `Run` (`NotFound`: `known_run`)."""
    await known_run(gw, seen, run)
    reply = await reply_of(gw, seen.thread, run.turn)
    state = run_status(seen.status, run.turn, reply, seen.running)
    return run_object(seen.shown, run, seen.team, state, seen.created, await turn_metadata(gw, seen.thread, run.turn))


async def answered_in(gw: Gateway, thread: str, run: RunRef) -> bool:
    """Whether an answer to question `run.resumed` was taken while turn `run.turn` ran (the
    thread's history: its checkpoints, durable_teams/client/checkpoints.py); True when the
    history does not replay here (as before: a run is not denied for it)."""
    try:
        points = await list_checkpoints(gw.client, thread)
    except ReplayFailed:
        return True
    turn = 0
    for point in points:
        if point.kind == "turn" and point.turn is not None:
            turn = point.turn
        elif point.kind == "answer" and point.question == run.resumed and turn == run.turn:
            return True
    return False


async def turn_metadata(gw: Gateway, thread: str, turn: int) -> dict[str, Any] | None:
    """The metadata the run that began turn `turn` was sent with (None: none, or a turn of long ago)."""
    if turn < 1:
        return None
    found: dict[str, Any] | None = await gw.client.get_workflow_handle(thread).query(TeamWorkflow.turn_metadata, turn)
    return found
