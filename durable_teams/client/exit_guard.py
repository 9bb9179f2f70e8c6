"""A clean interpreter exit after using the Temporal client.

The cause of "Fatal Python error: PyGILState_Release ... Python runtime state: finalizing"
(sdk-python issue 300), which a bare `temporalio` client shows after one call: the SDK's native (Rust, Tokio) threads hand each call's result to Python by
taking the GIL (`PyGILState_Ensure`), scheduling the result on the event loop and releasing the
GIL again (`PyGILState_Release`). The main thread can wake up on that result, finish
`asyncio.run(...)` and start finalizing the interpreter before the native thread has finished
its release; the release then finds the interpreter finalizing and aborts the process (exit 134).

The fix: before the interpreter finalizes (an `atexit` handler runs before that), wait, with
the GIL released, until no thread that Python does not know (a native thread inside a
`PyGILState_Ensure`/`Release` pair) still holds a thread state. Such a thread is always on its
way out within microseconds, so the wait is short; it is bounded in any case. `connect()`
installs it; `install()` is public for programs that make their own `Client.connect`.

A program that is done with Temporal and only has to end (the CLI, the worker) does better still
with `exit_now`: it flushes its output and ends the process without finalizing the interpreter
at all. Finalizing can also hang: the interpreter's last garbage collection drops the SDK's
client and runtime, whose native side waits for its threads, while one of them waits for the
GIL the collecting thread holds.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
import time
from typing import NoReturn

_installed = False


def _api() -> ctypes.PyDLL:
    api = ctypes.pythonapi  # a PyDLL: calls keep the GIL, so the list cannot change under us
    api.PyInterpreterState_Main.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
    api.PyThreadState_Next.restype = ctypes.c_void_p
    api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
    return api


def thread_states() -> int:
    """How many threads hold a Python thread state now (Python's threads and native ones)."""
    api = _api()
    count = 0
    state = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Main())
    while state:
        count += 1
        state = api.PyThreadState_Next(state)
    return count


def native_threads_in_python() -> int:
    """Threads inside Python that the `threading` module does not know: native callbacks."""
    return max(thread_states() - threading.active_count(), 0)


def wait_for_native_threads(limit_seconds: float = 2.0) -> bool:
    """Sleep (the GIL released) until no native thread is inside Python; False on the limit."""
    deadline = time.monotonic() + limit_seconds
    while native_threads_in_python():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def install() -> None:
    """Run `wait_for_native_threads` at interpreter exit (once, however often it is called)."""
    global _installed
    if not _installed:
        _installed = True
        atexit.register(wait_for_native_threads)


def exit_now(code: int) -> NoReturn:
    """Flush standard output and error, then end the process with `code`, skipping interpreter
    finalization (see the module's docstring): for a program's entry point, once its work is
    done. `atexit` handlers do not run, so OpenTelemetry's providers, when in use, are flushed
    here (spans and metrics still buffered would otherwise be lost)."""
    flush_telemetry()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that has gone (`| head`), a closed stream
            pass
    os._exit(code)


def flush_telemetry(timeout_millis: int = 2000) -> None:
    """Flush the global OpenTelemetry tracer and meter providers, if this process loaded
    OpenTelemetry (`opentelemetry-instrument` registers their shutdown with `atexit`)."""
    for module, getter in (("opentelemetry.trace", "get_tracer_provider"),
                           ("opentelemetry.metrics", "get_meter_provider")):
        api = sys.modules.get(module)
        flush = getattr(getattr(api, getter)(), "force_flush", None) if api is not None else None
        if flush is not None:
            try:
                flush(timeout_millis)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
