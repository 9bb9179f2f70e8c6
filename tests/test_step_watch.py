"""When a turn's stream reads the conversation again (durable_teams/client/step_watch.py): at a
workflow task scheduled (its read waits on the server for that task, and the watch polls again
only once it is read), at a completed task no read reflected, never at one a read did."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent, WorkflowTaskCompletedEventAttributes

from durable_teams.client.step_watch import StepWatch

pytestmark = pytest.mark.pure

SCHEDULED = EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
STARTED = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
ACTIVITY_DONE = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
ACTIVITY_SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED


def event(event_id: int, kind: int, started: int = 0) -> HistoryEvent:
    found = HistoryEvent(event_id=event_id, event_type=kind)  # type: ignore[arg-type]
    if kind == COMPLETED:
        found.workflow_task_completed_event_attributes.CopyFrom(
            WorkflowTaskCompletedEventAttributes(started_event_id=started))
    return found


def watch() -> StepWatch:
    return StepWatch(None, "wf")  # type: ignore[arg-type] # _take never calls the server


async def test_a_task_scheduled_wakes_a_read_and_the_watch_waits_for_it() -> None:
    steps = watch()
    steps.read(10)  # a read said what it reflects
    taking = asyncio.ensure_future(steps._take([event(11, ACTIVITY_DONE), event(12, SCHEDULED)]))
    await asyncio.wait_for(steps.ready.wait(), 5)
    assert not taking.done()  # no poll while the read waits on the task
    steps.ready.clear()
    steps.read(13)  # answered with the task (it started at 13)
    await asyncio.wait_for(taking, 5)

    await steps._take([event(13, STARTED)])
    await steps._take([event(14, COMPLETED, started=13), event(15, ACTIVITY_SCHEDULED)])
    assert not steps.ready.is_set()  # that task's step was read already


async def test_a_completed_task_no_read_reflected_wakes_a_read() -> None:
    steps = watch()
    steps.read(10)
    steps.ready.clear()
    await steps._take([event(13, STARTED)])
    assert not steps.ready.is_set()
    await steps._take([event(14, COMPLETED, started=13)])
    assert steps.ready.is_set()


async def test_reads_of_an_earlier_worker_say_nothing_and_every_completed_task_is_read() -> None:
    steps = watch()
    steps.read(None)  # an earlier worker's page: no history length
    steps.ready.clear()
    await asyncio.wait_for(steps._take([event(11, ACTIVITY_DONE), event(12, SCHEDULED)]), 5)
    assert not steps.ready.is_set()  # no early read: it could not tell whether the read saw the task
    await steps._take([event(13, STARTED), event(14, COMPLETED, started=13)])
    assert steps.ready.is_set()
