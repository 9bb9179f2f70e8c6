"""A firing of a cron with a webhook (durable_teams/workflows/scheduled_turns.py): the run it
begins, made from outside the workflow so its turn's number is known. Retried safely: the
thread's turn goes in under the firing's turn id (the same number again), the assistant's
cron's thread under an id of the firing's (started once)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.scheduled_turns import Fired, Firing
from durable_teams.workflows.state import UserTurn


def thread_of(firing: Firing) -> str:
    """The thread an assistant's cron starts at this firing."""
    return f"{firing.id}-thread"


@activity.defn(name="fire_cron")
async def fire_cron(firing: Firing) -> Fired:
    """Begin the firing's run: its thread and turn, or why the thread refused it."""
    client, turn = activity.client(), firing.turn
    if turn.start is not None:
        thread = thread_of(firing)
        timeout = timedelta(seconds=turn.task_timeout_seconds) if turn.task_timeout_seconds else None
        try:
            await client.start_workflow(TeamWorkflow.run, turn.start, id=thread, task_queue=firing.task_queue,
                                        memo=turn.memo or {}, task_timeout=timeout,
                                        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        except WorkflowAlreadyStartedError:
            pass  # started by an attempt before this one
        return Fired(thread=thread, turn=1)
    handle = client.get_workflow_handle(turn.thread)
    try:
        number = await handle.execute_update(
            TeamWorkflow.submit_turn, UserTurn(text=turn.text, turn_id=firing.turn_id, sender="cron"))
    except WorkflowUpdateFailedError as err:
        return Fired(refused=str(getattr(err.cause, "message", None) or err.cause or err))
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return Fired(refused=f"the thread {turn.thread} has ended")
    return Fired(thread=turn.thread, turn=number)


ACTIVITIES: list[Callable[..., Any]] = [fire_cron]
