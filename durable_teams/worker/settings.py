"""A worker process's settings from the environment, each read when used, so a bad value is
one line from the worker that uses it (`SystemExit` with the variable, what it takes, and what
it got), never an error from every import."""

from __future__ import annotations

import gc
import math
import os
from datetime import timedelta
from typing import Any

from durable_teams.worker.build import cpu_tuner

GRACEFUL_ENV = "DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS"
GRACEFUL_SECONDS = 20.0
"""On SIGTERM, how long running model and tool calls may take to finish before they are cancelled
(and retried elsewhere), unless `$DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS` says otherwise. Docker
waits 10 s by default: docker-compose.yml gives workers 30 s."""
MAX_SETTING_SECONDS = 86_400
"""The longest a worker's time setting may be (a day): far past any use; a much larger number
would not even fit a timedelta."""


def graceful_timeout() -> timedelta:
    """`$DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS` (default GRACEFUL_SECONDS; 0: cancel running
    calls at once). Read when used, so a bad value is one line from the worker, not an error
    from every import of this module."""
    raw = os.environ.get(GRACEFUL_ENV, "").strip()
    if not raw:
        return timedelta(seconds=GRACEFUL_SECONDS)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_SETTING_SECONDS:  # also NaN
        raise SystemExit(f"durable-teams worker: {GRACEFUL_ENV} must be a number of seconds from 0 "
                         f"to {MAX_SETTING_SECONDS:,}, not {raw!r}")
    return timedelta(seconds=seconds)


GC_ENV = "DURABLE_TEAMS_GC_THRESHOLD"


def gc_threshold() -> int:
    """`$DURABLE_TEAMS_GC_THRESHOLD`: allocations between young garbage collections in a worker
    process (default 10,000; 0 keeps Python's settings). See `tune_garbage_collector`."""
    raw = os.environ.get(GC_ENV, "").strip() or "10000"
    if not raw.isdigit():
        raise SystemExit(f"durable-teams worker: {GC_ENV} must be a whole number (0 keeps "
                         f"Python's settings), not {raw!r}")
    return int(raw)


def tune_garbage_collector(threshold: int = 10_000) -> None:
    """Make Python's cyclic garbage collector cheaper for a worker process; call it once the
    worker is built. A worker keeps many long-lived objects (its cached conversations, their
    sandboxes), and with Python's default (a young collection every 700 allocations, whose
    survivors pile up until a full collection walks every object) collections took about 1.2 ms
    of CPU per model call at 500 concurrent conversations (`python -m bench.scale latency`).
    Objects made so far (modules, teams, the worker) are frozen out of collections, and young
    collections run every `threshold` allocations (0: leave Python's settings). Process-wide:
    the `durable-teams worker` process does it; an application embedding a worker decides."""
    if threshold <= 0:
        return
    gc.freeze()
    gc.set_threshold(threshold)


STICKY_ENV = "DURABLE_TEAMS_STICKY_SECONDS"


def sticky_timeout() -> timedelta:
    """How long the next workflow task of a conversation this worker holds in its cache waits
    for this worker before any worker may take it: what a conversation waits after its worker
    crashed (`$DURABLE_TEAMS_STICKY_SECONDS`, default 10 s, Temporal's). Lower fails over faster;
    a worker too busy to poll within it then hands conversations to others, which replay them."""
    raw = os.environ.get(STICKY_ENV, "").strip() or "10"
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SystemExit(f"durable-teams worker: {STICKY_ENV} must be a positive number of "
                         f"seconds, not {raw!r}")
    if seconds > MAX_SETTING_SECONDS:
        raise SystemExit(f"durable-teams worker: {STICKY_ENV} must be at most {MAX_SETTING_SECONDS:,} "
                         f"seconds, not {raw!r}")
    return timedelta(seconds=seconds)


SLOTS_ENV = "DURABLE_TEAMS_WORKFLOW_SLOTS"
MAX_SLOTS = 100_000
"""Far past what one process serves; a larger number would not even reach the SDK's core."""


def slot_options() -> dict[str, Any]:
    """`$DURABLE_TEAMS_WORKFLOW_SLOTS`: how many workflow tasks, and as many local calls, the
    worker runs at once. Unset: the SDK's 100. A number: that many. `auto`: as many as keep the
    machine's CPU under 80 % (`cpu_tuner`). With local model calls a conversation holds its
    slot for the whole call, so this is how many conversations move at once (docs/deployment.md)."""
    raw = os.environ.get(SLOTS_ENV, "").strip()
    if not raw:
        return {}
    if raw.lower() == "auto":
        return {"tuner": cpu_tuner(0.8)}
    if raw.isdigit() and 2 <= int(raw) <= MAX_SLOTS:
        return {"max_concurrent_workflow_tasks": int(raw), "max_concurrent_local_activities": int(raw)}
    raise SystemExit(f"durable-teams worker: {SLOTS_ENV} must be a whole number from 2 to "
                     f"{MAX_SLOTS:,} or 'auto', not {raw!r}")
