"""Heartbeats while a regular activity waits on the network: the server's answer to a heartbeat is
how a regular activity learns that its workflow cancelled it (a local activity is told by its own
worker). Cancelled, the call's task is cancelled too, which closes its HTTP connection instead of
leaving the endpoint working for a conversation that has gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")

HEARTBEAT_SECONDS = 1.0
"""How often a waiting activity records a heartbeat (the worker sends at most one per
THROTTLE, so this costs no server calls of its own)."""
THROTTLE = timedelta(seconds=5)
"""The worker's `default_heartbeat_throttle_interval` (durable_teams/worker/build.py): a cancelled
regular call hears of it within about this long."""


async def heartbeating(call: Awaitable[T]) -> T:
    """`call`'s result; in a regular activity, heartbeating while it runs."""
    if not activity.in_activity() or activity.info().is_local:
        return await call
    task = asyncio.ensure_future(call)
    try:
        while not task.done():
            activity.heartbeat()
            await asyncio.wait({task}, timeout=HEARTBEAT_SECONDS)
    finally:
        if not task.done():  # this activity was cancelled: so is the call, and its connection
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return task.result()
