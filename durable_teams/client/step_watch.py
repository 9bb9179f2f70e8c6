"""When to read a running conversation again, for a reader that shows each of its steps (a
turn's event stream): one long poll of its history, about one read per step, and the read
answered on the step's own workflow task. The gateway's streams learn of steps from the
worker's announcements on the live hub instead, and use this only while none come
(durable_teams/gateway/core/step_news.py); `durable-teams follow` and `/events` use it throughout.

The state a reader shows changes only when a workflow task completes. The history tells when
one is scheduled (an activity ended, a signal or an update came): a query sent then waits on
the server for that task and is answered with it (Temporal buffers a query while a workflow
task is pending and dispatches it on the task), so it reads the step's outcome and costs one
call, where a query of a conversation at rest costs two (the query and the worker's answer).
Meanwhile the watch does not poll (the events of that task come in one batch afterwards), and
the task's completion wakes no second read when the read already reflected it: a `LogPage`
says the history length it reflects (`history_length`, None from earlier workers, which are
read at every completed task as before).

    watch = StepWatch(client, workflow_id)
    task = asyncio.ensure_future(watch.run())
    while ...:
        watch.ready.clear()
        page = ...  # the read
        watch.read(page.history_length)
        await watch.ready.wait()
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus

ENDS_TASK = {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
             EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT}


class StepWatch:
    """`ready` is set when a read may show something new: at once, when a workflow task is
    scheduled (once an earlier read reported its history length) or completes unread, and when
    the conversation's run closes (the watch then ends: `ended`)."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.client, self.workflow_id = client, workflow_id
        self.ready = asyncio.Event()
        self.ended = False
        self.covered = 0
        """The largest history length a read reflected (0: none said)."""
        self._read = asyncio.Event()
        self._read.set()

    def read(self, history_length: int | None) -> None:
        """A read made after `ready` was set, reflecting `history_length` events (None: not said)."""
        if history_length:
            self.covered = max(self.covered, history_length)
        self._read.set()

    async def run(self) -> None:
        """Watch until the conversation stops running (follows continue-as-new and a rewind's
        new run, as the description names the current run)."""
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            while True:
                described = await handle.describe()
                known = described.raw_description.workflow_execution_info.history_length
                self.ready.set()
                if described.status != WorkflowExecutionStatus.RUNNING:
                    return
                run = self.client.get_workflow_handle(self.workflow_id, run_id=described.run_id)
                events = run.fetch_history_events(wait_new_event=True)
                while True:
                    await events.fetch_next_page()
                    batch = [e for e in events.current_page or [] if e.event_id > known]
                    if batch:
                        known = batch[-1].event_id
                        await self._take(batch)
                    if events.next_page_token is None:
                        break  # that run closed: the next, if any, is described
        finally:
            self.ended = True
            self.ready.set()

    async def _take(self, batch: Sequence[HistoryEvent]) -> None:
        completed = any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
                        and e.workflow_task_completed_event_attributes.started_event_id > self.covered
                        for e in batch)
        pending = False
        for event in batch:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                pending = True
            elif event.event_type in ENDS_TASK:
                pending = False
        early = pending and self.covered > 0  # a reader whose reads say what they reflect
        if completed or early:
            self._read.clear()
            self.ready.set()
        if early:  # its read waits on the task: the task's own events are polled once it is read
            await self._read.wait()
