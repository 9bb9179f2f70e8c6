"""Announcing a conversation's new log messages on the live hub, from the worker that ran the
workflow task that appended them (the workflow records them: durable_teams/workflows/log_outbox.py).

A gateway streaming a turn shows each step from its announcement instead of learning of it
through Temporal (a long poll of the history and a query per step); it reads the log once at
the turn's end to confirm (durable_teams/gateway/core/thread_log.py). Each workflow instance is
wrapped (`AnnouncingInstance`, by the runners of durable_teams/worker/sandbox_runner.py): once an
activation has completed successfully, what it appended is handed to the worker's event loop,
which publishes it (`Logged`: workflow id, run id, log index, the message as the log has it) on
the hub the worker's model calls send their deltas to. A failed activation's appends are
dropped (its task is retried, and appends again). Never blocking the workflow's thread, never
raising into it: at most `IN_FLIGHT_LIMIT` batches wait for the loop, more are dropped (a
reader then fills the gap with a read). The hub never logs a message's content.

Announced before Temporal has the task's completion: a worker that dies in between (or whose
completion the server refuses) announced steps the conversation does not have yet. The task
runs again on another worker, from the same history plus whatever came meanwhile (a signal,
an update): it appends the same messages at the same indexes, unless what came meanwhile
changes what the workflow does (an answer taken before the model's reply, say), and then a
reader saw, at some index, a message the log holds differently. The log is the truth: a
stream's final read confirms the steps it showed and adds what it missed, but cannot take back
one it showed; a reader that reads the log again (`/events`, the thread's messages) sees it as
it is.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.worker import WorkflowInstance
from temporalio.workflow import Info

from durable_teams.live.hub import LiveHub, Logged
from durable_teams.workflows import log_outbox
from durable_teams.workflows.messages import Message

IN_FLIGHT_LIMIT = 10_000
"""Activations' announcements handed to the event loop and not yet published; beyond, dropped."""


class LogAnnouncer:
    """Publishes what activations appended on `hub`, on the event loop the worker runs on."""

    def __init__(self, hub: LiveHub) -> None:
        self.hub = hub
        self.loop: asyncio.AbstractEventLoop | None = None
        self._in_flight = 0
        self._lock = threading.Lock()

    def wrap(self, inner: WorkflowInstance, info: Info) -> WorkflowInstance:
        """`inner`, announcing what its activations append (called on the worker's loop)."""
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:  # not made on a loop: the one seen before, if any
            pass
        return AnnouncingInstance(inner, info, self)

    def ended(self, info: Info, act: WorkflowActivation, completion: WorkflowActivationCompletion | None) -> None:
        """An activation `act` of run `info.run_id` ended (None: it raised): announce its
        appends when it completed successfully, else drop them; an eviction stops recording
        the run. Called on the workflow's thread."""
        appended = log_outbox.take(info.run_id)
        if any(job.HasField("remove_from_cache") for job in act.jobs):
            log_outbox.closed(info.run_id)
        loop = self.loop
        if not appended or completion is None or completion.HasField("failed") or loop is None:
            return
        with self._lock:
            if self._in_flight >= IN_FLIGHT_LIMIT:
                return
            self._in_flight += 1
        try:
            loop.call_soon_threadsafe(self._publish, info.workflow_id, info.run_id, appended)
        except RuntimeError:  # the loop closed: the worker is stopping
            with self._lock:
                self._in_flight -= 1

    def _publish(self, workflow_id: str, run_id: str, appended: list[tuple[int, Message]]) -> None:
        with self._lock:
            self._in_flight -= 1
        try:
            if not self.hub.wants_steps(workflow_id):  # this process's hub, no reader of steps
                return
            for index, message in appended:
                self.hub.publish(Logged(workflow_id, run_id, index, message.model_dump(mode="json")))
        except Exception:  # noqa: BLE001, S110 - announcements are best effort: readers read the log
            pass


class AnnouncingInstance(WorkflowInstance):
    """A workflow instance whose activations' appends `announcer` announces; all else delegated."""

    def __init__(self, inner: WorkflowInstance, info: Info, announcer: LogAnnouncer) -> None:
        self._inner, self._info, self._announcer = inner, info, announcer

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        completion = None
        log_outbox.opened(self._info.run_id)  # at its first activation (an instance the sandbox
        try:  # makes to validate a workflow is never activated)
            completion = self._inner.activate(act)
            return completion
        finally:
            try:
                self._announcer.ended(self._info, act, completion)
            except Exception:  # noqa: BLE001, S110 - never into the workflow's activation
                pass

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._inner.get_external_store_context(command_info)

    def get_info(self) -> Info:
        return self._inner.get_info()

    def get_thread_id(self) -> int | None:
        return self._inner.get_thread_id()
