"""The log outbox: the messages a conversation appended to its log in the activation running
now, kept per run until the worker takes them when the activation ends (worker/log_announcer.py
announces them on the live hub, so a gateway's stream shows each step without reading the log
through Temporal).

Recording never changes what the workflow does: its code never reads anything back from here,
so its commands, replay and determinism are untouched (no `workflow.patched`). Only appends made
while the workflow runs for real are recorded: a replay (a worker rebuilding an evicted
conversation, a `Replayer`, time travel reading a checkpoint) records nothing, as those
messages were announced when they were first appended. No I/O here: a dict of lists, written
by the workflow's thread and taken by the worker after the activation (a dict operation is
atomic under the GIL; one run's activations never overlap). Like offered_views.py, module
state the workflows only write and only the worker reads.

Only runs a worker announces are recorded (`opened` by the runner's instance, `closed` when
the worker evicts it): another worker in the process, or a process that is no worker, keeps
nothing here. The watcher is installed by importing this module, which the worker's announcer
does (durable_teams/worker/log_announcer.py).
"""

from __future__ import annotations

from temporalio import workflow

from .messages import Message
from .transcript import APPEND_WATCHERS

_PENDING: dict[str, list[tuple[int, Message]]] = {}
"""By run id, for the runs announced: (log index, message) appended in the activation under way."""


def record(index: int, message: Message) -> None:
    """Keep an append for the worker, when an announced run appended it running for real."""
    if not workflow.in_workflow() or workflow.unsafe.is_replaying():
        return
    pending = _PENDING.get(workflow.info().run_id)
    if pending is not None:
        pending.append((index, message))


def opened(run_id: str) -> None:
    """Record run `run_id`'s appends from now on."""
    _PENDING.setdefault(run_id, [])


def take(run_id: str) -> list[tuple[int, Message]]:
    """What run `run_id` appended since the last `take` (and forget it)."""
    if not _PENDING.get(run_id):
        return []
    taken, _PENDING[run_id] = _PENDING[run_id], []
    return taken


def closed(run_id: str) -> None:
    """Stop recording run `run_id` (its instance left the worker), forgetting what it kept."""
    _PENDING.pop(run_id, None)


if record not in APPEND_WATCHERS:
    APPEND_WATCHERS.append(record)
