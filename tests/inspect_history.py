"""Reading a conversation's workflow history as a test checks it: failed workflow tasks, the
kinds of events and activities recorded, and raw payloads as a hand-built client sends them."""

from __future__ import annotations

from collections import Counter

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.common import RawValue


def raw(data: bytes, encoding: bytes = b"json/plain") -> RawValue:
    """A payload as a hand-built client (or `temporal --input-meta encoding=...`) sends it."""
    return RawValue(Payload(metadata={"encoding": encoding}, data=data))


async def task_failures(handle: WorkflowHandle) -> int:
    history = await handle.fetch_history()
    return sum(1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)


async def event_kinds(handle: WorkflowHandle) -> Counter[str]:
    kinds: Counter[str] = Counter()
    async for e in handle.fetch_history_events():
        name = EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            name = e.marker_recorded_event_attributes.marker_name
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = e.activity_task_scheduled_event_attributes.activity_type.name
        kinds[name] += 1
    return kinds


async def activity_names(handle: WorkflowHandle) -> list[str]:
    history = await handle.fetch_history()
    return [e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]


async def task_retried(handle: WorkflowHandle) -> bool:
    """Whether the workflow's first task failed and its next attempt is on record."""
    return (await handle.describe()).raw_description.pending_workflow_task.attempt >= 2


async def task_failure_messages(handle: WorkflowHandle) -> list[str]:
    """The messages of the workflow's failed tasks, oldest first."""
    history = await handle.fetch_history()
    return [e.workflow_task_failed_event_attributes.failure.message for e in history.events
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
