"""`multitask_strategy`: what a new run does to a busy thread (a turn running, queued, or
waiting for an answer), as the product names it: "reject" refuses (409), "enqueue" queues the
turn behind the others (the workflow's queue), "interrupt" cancels the turn in progress (its
activities are told, a question it waits on is withdrawn: the workflow's `cancel_turn`), and
"rollback" rewinds the thread to before that turn (a Temporal reset to the end of the turn
before it, durable_teams/client/time_travel.py), so the new run takes its place."""

from __future__ import annotations

from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from durable_teams.client.checkpoints import list_checkpoints
from durable_teams.client.time_travel import CheckpointError, rewind
from durable_teams.client.updates_off import updates_disabled
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_queue import working_turn
from durable_teams.gateway.doors.langgraph.langgraph_wire import Unsupported
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")


class Busy(checks.BadRequest):
    """409: the thread runs a turn or waits for an answer, and the strategy is "reject"."""

    kind = "thread_busy"

    def __init__(self, message: str) -> None:
        super().__init__(message, 409)


async def make_room(gw: Gateway, thread: str, status: ConversationStatus, strategy: str) -> None:
    """Do what `strategy` does to the busy thread before the new turn goes in."""
    current = await working_turn(gw, thread, status)  # the running turn, even behind a cancelled one
    if strategy == "reject":
        if status.pending:
            raise Busy(f"thread {thread} waits for the answer to interrupt {status.pending[0].question_id}: "
                       "resume it with command={'resume': ...}, or send multitask_strategy "
                       "'enqueue', 'interrupt' or 'rollback'")
        raise Busy(f"thread {thread} is running run t{current} (multitask_strategy 'reject'; or send "
                   "'enqueue', 'interrupt' or 'rollback')")
    if strategy == "interrupt":
        await cancel_turn(gw, thread, current)
    elif strategy == "rollback":
        await roll_back(gw, thread, current)


async def cancel_turn(gw: Gateway, thread: str, turn: int) -> None:
    """Cancel turn `turn` (running or queued); one that ended meanwhile is left as it ended."""
    try:
        await cancel_update(gw, thread, turn)
    except WorkflowUpdateFailedError:  # ended (or being cancelled) meanwhile: nothing to stop
        pass


async def cancel_update(gw: Gateway, thread: str, turn: int) -> None:
    """The workflow's `cancel_turn` update; on a namespace with updates turned off, a 501 saying
    so (a turn is cancelled only by an update: nothing was changed)."""
    try:
        await gw.client.get_workflow_handle(thread).execute_update(TeamWorkflow.cancel_turn, turn)
    except RPCError as err:
        if not updates_disabled(err):
            raise
        raise Unsupported("cancelling a run (and multitask_strategy 'interrupt') on this Temporal namespace: "
                          f"it takes a workflow update, and the server refuses them ({err.message}); its "
                          "operator can allow them (frontend.enableUpdateWorkflowExecution)", endpoint=True) from None


async def roll_back(gw: Gateway, thread: str, turn: int) -> None:
    """Rewind the thread to before turn `turn` was taken: its turn and those after it are left
    in the abandoned branch (a reset keeps it readable as an earlier run)."""
    points = [p for p in await list_checkpoints(gw.client, thread) if p.kind == "turn" and p.turn == turn]
    if not points:
        await cancel_turn(gw, thread, turn)  # queued, not taken yet: out of the queue is all there is
        return
    try:
        await rewind(gw.client, thread, points[-1].id, reason=f"LangGraph rollback of run t{turn}")
    except CheckpointError as err:  # the first turn: nothing before it
        raise checks.BadRequest(f"run t{turn} cannot be rolled back: {err} (send multitask_strategy "
                                "'interrupt' to cancel it instead)", 409) from None
