"""A turn's outcome in one call: the workflow's `turn_outcome` update
(durable_teams/workflows/turn_waits.py), which completes when the turn has its reply (or asks a
person a question the waiter has not seen). The call waits on the server, so a turn costs the
same few calls however long its model calls take; nothing asks the workflow meanwhile.

Every way in waits here first: `AcceptedTurn.reply()` (send_turn, the native turn stream) and
the gateway's exchanges (chat, Responses, A2A, MCP). When this way cannot tell, `wait_outcome`
raises `OutcomeUnavailable` and the caller waits the earlier way (the history watch of
durable_teams/client/reply_watch.py, the gateway's reading of the thread's state):
- a worker of an earlier release, without the update (it is refused);
- a cluster with updates off;
- the run that took the turn ended meanwhile (a continue-as-new, a rewind's reset: the
  earlier way follows the conversation into its next run and tells an abandoned turn);
- the turn's reply is no longer kept;
- this process already waits on the conversation this way (`IN_FLIGHT_PER_CONVERSATION`):
  an update waiting holds one of the ten Temporal lets a workflow have in flight, so many
  waiters in one process share the history watch instead of taking them all.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter
from collections.abc import Iterable

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError

from durable_teams.workflows.state import OutcomeWait, TurnOutcome

IN_FLIGHT_PER_CONVERSATION = 1
"""`turn_outcome` updates one process keeps in flight on one conversation at most."""


class OutcomeUnavailable(Exception):
    """The update cannot tell this turn's outcome (the module's docstring says when): wait the
    earlier way."""


_IN_FLIGHT: weakref.WeakKeyDictionary[Client, Counter[str]] = weakref.WeakKeyDictionary()


async def wait_outcome(client: Client, workflow_id: str, number: int, *, seen: Iterable[str] | None = None,
                       run_id: str | None = None) -> TurnOutcome:
    """Turn `number`'s outcome: its reply, or (given `seen`, the ids of the questions the
    caller knows of) a question asked that is not among them. `run_id`: the run that took the
    turn, when known (a rewind's new run is then not asked). Raises `OutcomeUnavailable`."""
    in_flight = _IN_FLIGHT.setdefault(client, Counter())
    if in_flight[workflow_id] >= IN_FLIGHT_PER_CONVERSATION:
        raise OutcomeUnavailable(f"this process already waits on {workflow_id} with the update")
    in_flight[workflow_id] += 1
    wait = OutcomeWait(turn=number, seen=sorted(seen) if seen is not None else None)
    try:
        outcome = await client.get_workflow_handle(workflow_id, run_id=run_id).execute_update(
            "turn_outcome", wait, result_type=TurnOutcome)
    except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        if _cancelled():  # the SDK reports the caller's cancelling as an RPC timeout
            raise asyncio.CancelledError() from err
        cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err  # the workflow's reason
        raise OutcomeUnavailable(str(cause)) from err
    finally:
        in_flight[workflow_id] -= 1
        if not in_flight[workflow_id]:
            del in_flight[workflow_id]
    if outcome.gone:
        raise OutcomeUnavailable(f"conversation {workflow_id} no longer keeps turn {number}'s reply")
    return outcome


def _cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
