"""An input named by what it is (a digest of its parts: the thread, the door, the request),
so the same request sent again goes in under the same id, and whether a thread took it: the
workflow keeps the ids of the inputs it took (`turn_number`), so nothing is kept here."""

from __future__ import annotations

import asyncio
import hashlib

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_teams.gateway.core.threads import Gateway


def input_id(*parts: str) -> str:
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return f"named-{digest[:32]}"


async def taken_soon(gw: Gateway, thread: str, input_id: str) -> int | None:
    """`taken`, waiting up to `busy_seconds` for the request that started `thread` a moment ago
    to send its input (never sent twice at once: the second would answer the first's question)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gw.busy_seconds
    while True:
        number = await taken(gw, thread, input_id)
        if number is not None or loop.time() >= deadline:
            return number
        await asyncio.sleep(gw.poll_seconds)  # the workflow's state, polled as `_outcome` does


async def taken(gw: Gateway, thread: str, input_id: str) -> int | None:
    """The turn `thread` took the input `input_id` in (or answered with it), None when it did
    not (or there is no such thread)."""
    try:
        return await gw.turn_of(thread, input_id)
    except (RPCError, WorkflowQueryFailedError):
        return None
