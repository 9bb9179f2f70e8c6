"""Sending again is for a busy server, never for a caller that is cancelling: the SDK reports the
cancellation of an update as a timeout whose cause may be a CANCELLED RPC error, which is also
what a busy server says. Taken for the server's, a `chat` turn cancelled by Ctrl-C would be
sent again and its reply waited on, and chat would not exit."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import transient_reason

pytestmark = pytest.mark.pure


def cancelled_update() -> WorkflowUpdateRPCTimeoutOrCancelledError:
    err = WorkflowUpdateRPCTimeoutOrCancelledError()
    err.__cause__ = RPCError("operation was cancelled", RPCStatusCode.CANCELLED, b"")
    return err


async def test_a_cancelled_rpc_is_transient_only_when_nobody_is_cancelling() -> None:
    assert transient_reason(cancelled_update()) == "operation was cancelled"  # the server's: send again
    seen: list[str | None] = []
    started = asyncio.Event()

    async def caller() -> None:
        try:
            started.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append(transient_reason(cancelled_update()))
            raise

    task = asyncio.ensure_future(caller())
    await started.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert seen == [None]  # the caller's own cancellation: not a reason to send again
