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
import uuid
import weakref
from collections import Counter
from collections.abc import Iterable
from typing import Any

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError

from durable_teams.workflows.conversation_reads import OutcomeWait, TurnOutcome

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
    turn, when known (a rewind's new run is then not asked). Raises `OutcomeUnavailable`.

    A wait for the reply alone has the same update id for every waiter of the turn (Temporal
    takes an update id once per run): waiters in many processes, and a caller that left and
    came back, share one update. A wait its caller leaves stays in flight on the server until
    the turn's outcome; this process counts it until then (`_settle`)."""
    in_flight = _IN_FLIGHT.setdefault(client, Counter())
    if in_flight[workflow_id] >= IN_FLIGHT_PER_CONVERSATION:
        raise OutcomeUnavailable(f"this process already waits on {workflow_id} with the update")
    in_flight[workflow_id] += 1
    wait = OutcomeWait(turn=number, seen=sorted(seen) if seen is not None else None)
    update_id = f"turn-outcome-{number}" if seen is None else f"turn-outcome-{number}-{uuid.uuid4().hex}"
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    settled = False
    try:
        outcome = await handle.execute_update("turn_outcome", wait, id=update_id, result_type=TurnOutcome)
        settled = True
    except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        if _cancelled():  # the SDK reports the caller's cancelling as an RPC timeout
            raise asyncio.CancelledError() from err
        settled = True
        cause = err.cause if isinstance(err, WorkflowUpdateFailedError) else err  # the workflow's reason
        raise OutcomeUnavailable(str(cause)) from err
    finally:
        if settled:
            _release(in_flight, workflow_id)
        else:  # the caller left: counted until the server ends the update
            _LEFT.add(asyncio.ensure_future(_settle(handle.get_update_handle(update_id), in_flight, workflow_id)))
    if outcome.gone:
        raise OutcomeUnavailable(f"conversation {workflow_id} no longer keeps turn {number}'s reply")
    return outcome


_LEFT: set[asyncio.Future[None]] = set()
"""The `_settle` tasks running (kept, so none is collected while it waits)."""


async def _settle(update: WorkflowUpdateHandle[Any], in_flight: Counter[str], workflow_id: str) -> None:
    """Wait for an update its caller left to end (its turn's outcome, its run's end), then
    count it out of this process's waits on the conversation."""
    try:
        await update.result()
    except Exception:  # noqa: BLE001 - ended either way: only that it ended matters here
        pass
    finally:
        _release(in_flight, workflow_id)
        _LEFT.discard(asyncio.current_task())  # type: ignore[arg-type]


def _release(in_flight: Counter[str], workflow_id: str) -> None:
    in_flight[workflow_id] -= 1
    if in_flight[workflow_id] <= 0:
        del in_flight[workflow_id]


def _cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
