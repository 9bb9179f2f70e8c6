"""Ctrl-C for the CLI's commands: the command is cancelled, so its cleanup runs (a chat's turn in
flight is cancelled and waited for), and the process exits 130. Should that cleanup not end
within `GRACE_SECONDS` (a cancellation can be lost in the layers below us), or at a second
Ctrl-C, it exits 130 anyway: a person's Ctrl-C always ends the command."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable
from typing import TypeVar

from durable_teams.client.exit_guard import exit_now

GRACE_SECONDS = 5.0
INTERRUPTED = 130
T = TypeVar("T")


async def interruptible(command: Awaitable[T]) -> T | int:
    """`command`'s result, or 130 when Ctrl-C ended it."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupted = False

    def on_ctrl_c() -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C: no more waiting
            exit_now(INTERRUPTED)
        interrupted = True
        if task is not None:
            task.cancel()
        loop.call_later(GRACE_SECONDS, exit_now, INTERRUPTED)

    try:
        loop.add_signal_handler(signal.SIGINT, on_ctrl_c)
    except (NotImplementedError, RuntimeError):  # Windows: KeyboardInterrupt as before
        pass
    try:
        return await command
    except asyncio.CancelledError:
        if interrupted:
            return INTERRUPTED
        raise
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass
