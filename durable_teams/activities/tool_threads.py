"""Where sync tools run: daemon threads, reused.

A sync tool runs off the worker's event loop, so a slow one never blocks it. Starting a thread
per call made the event loop wait for the new thread to be scheduled (`Thread.start` blocks until
it runs: up to a GIL switch interval on a busy worker); idle threads wait for the next call
instead. The threads are daemons, so a tool stuck forever holds only its own thread and never the
worker's exit (a `ThreadPoolExecutor`'s threads are joined at exit).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("durable_teams.activities.tool_activities")

MAX_IDLE_THREADS = 32
"""Idle threads kept waiting for calls; a thread finishing a call beyond that many exits."""


class ToolThreads:
    """Daemon threads taking jobs from one queue; a new one starts when none is idle."""

    def __init__(self, max_idle: int = MAX_IDLE_THREADS) -> None:
        self.max_idle = max_idle
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None] | None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.started = 0

    @property
    def idle(self) -> int:
        """Threads waiting for a job."""
        with self._lock:
            return self._idle

    def submit(self, job: Callable[[], Callable[[], None] | None]) -> None:
        """Run `job` on an idle thread (or a new one). What `job` returns, if anything, is
        called once the thread counts as idle again: a job hands its outcome back from there,
        so a caller that submits its next job on receiving it finds the thread idle."""
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that idle thread (or a new one) takes this job
        self._jobs.put(job)
        if spawn:
            self.started += 1
            threading.Thread(target=self._work, name="tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            hand_back = self._jobs.get()()
            with self._lock:
                stay = self._idle < self.max_idle
                if stay:
                    self._idle += 1
            if callable(hand_back):
                hand_back()
            if not stay:
                return


_THREADS = ToolThreads()


class Escaped(Exception):
    """Carries a BaseException (SystemExit, KeyboardInterrupt, ...) a tool raised, so it
    becomes an error result instead of stopping the worker's event loop."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


def in_thread(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    """Run a sync tool in a daemon thread (`_THREADS`), with the caller's context (so
    current_idempotency_key() works). A tool that blocks past its deadline keeps its thread
    (others are started as needed) and does not hold up the worker's exit; its late outcome is
    logged and discarded."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()
    started = time.monotonic()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # cancelled: the call timed out or was cancelled
            log.warning("tool %s finished %.1fs after it started, after its call had ended "
                        "(timed out or cancelled); its result was discarded: %r",
                        getattr(fn, "__name__", fn), time.monotonic() - started, value)
        elif ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def target() -> Callable[[], None]:
        try:
            outcome: tuple[bool, Any] = (True, context.run(fn, *args, **kwargs))
        except BaseException as err:  # noqa: BLE001 - every outcome goes back to the loop
            keep = isinstance(err, Exception) and not isinstance(err, StopIteration)
            outcome = (False, err if keep else Escaped(err))

        def hand_back() -> None:
            try:
                loop.call_soon_threadsafe(settle, *outcome)
            except RuntimeError:  # the loop is closed: the worker has stopped
                pass
        return hand_back

    _THREADS.submit(target)
    return future
