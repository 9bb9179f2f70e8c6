"""A2A push notifications follow the conversation's event log, whatever the timing: a watch
whose reading of the task's state lags behind the conversation (a loaded machine: the state is
read only after the approval was asked, answered and the turn completed) still tells the
approval, then the completion, in that order. A state is told because the history holds it,
never because a read happened to fall inside it."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterable
from typing import Any

import httpx
import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from durable_teams.activities import a2a_push_delivery, a2a_push_log
from durable_teams.activities.a2a_push_delivery import watch_a2a_task
from durable_teams.client.send import send_reply
from durable_teams.examples import support
from durable_teams.gateway.doors.a2a.push_configs import PushOptions
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.a2a_push import WatchRequest
from durable_teams.workflows.a2a_tasks import TaskState
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.push_targets import newest_kept, with_cursor
from durable_teams.workflows.state import ConversationInput, Question
from durable_teams.workflows.turn_states import question_text

from .a2a_rpc import CARDS, Rpc, push_activities, said
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .waiting import NotYet, pending_question, questions, until

pytestmark = pytest.mark.workflow


def states_of(receiver_received: list[tuple[dict[str, str], object]]) -> list[str]:
    return [body["statusUpdate"]["status"]["state"] for _, body in receiver_received]  # type: ignore[index]


@pytest.mark.slow
async def test_a_state_read_late_still_tells_the_question_before_the_end(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    support.REFUNDS.clear()
    ended = asyncio.Event()
    real_state = a2a_push_delivery.task_state
    reads: list[str] = []

    async def late_state(thread: str, turn: int) -> TaskState:
        """The task's state, read only once the turn has ended (the test says when)."""
        await ended.wait()
        found = await real_state(thread, turn)
        reads.append(found.state)
        return found

    monkeypatch.setattr(a2a_push_delivery, "task_state", late_state)
    options = PushOptions(allow_private=True, retry_seconds=0.01)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            receiving() as receiver, \
            running_gateway(client, task_queue, cards=CARDS, a2a_push=options) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Content-Type": "application/json"}) as http:
        rpc = Rpc(http)
        asked = await rpc.task(said(support.QUESTION))
        made = await rpc.call("CreateTaskPushNotificationConfig", {"taskId": asked["id"], "url": receiver.url})
        assert "result" in made, made

        async def first_told() -> bool:  # the question asked when the config was set: from the history
            if not receiver.received:
                raise NotYet(reads)
            return True
        await until(first_told, "the question the task asks when the config is set")
        approval = await rpc.task(said("Order 4711", taskId=asked["id"]))
        assert approval["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = await rpc.task(said("yes", taskId=asked["id"]))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "TASK_STATE_COMPLETED" not in states_of(receiver.received)  # no end told while no state could be read
        ended.set()

        async def both_told() -> bool:
            if len(receiver.received) < 3:
                raise NotYet(states_of(receiver.received))
            return True
        try:
            await until(both_told, "the approval's and the completion's notifications")
        except AssertionError as missing:
            raise AssertionError(f"{missing}: {await push_activities(client, asked['id'])}") from None
    assert states_of(receiver.received) == ["TASK_STATE_INPUT_REQUIRED"] * 2 + ["TASK_STATE_COMPLETED"]
    told = receiver.received[1][1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert "Approve execute_refund(" in told and len(support.REFUNDS) == 1


@pytest.mark.slow
async def test_a_retried_watch_reads_on_from_where_the_last_attempt_left(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch keeps its place in the history in its heartbeats: an attempt that failed while
    it waited is followed by one that reads only the events after those already read, and
    tells the next question (and one given a place the server does not take reads from the
    start, and tells the same)."""
    read: list[list[int]] = []  # the ids of the events each attempt read
    real_asked_in = a2a_push_log.asked_in

    async def recording(client: Client, events: Iterable[HistoryEvent], seen: set[str]) -> Any:
        events = list(events)
        read[-1] += [e.event_id for e in events]
        return await real_asked_in(client, events, seen)

    monkeypatch.setattr(a2a_push_log, "asked_in", recording)
    compiled = support.build().compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(support.SCRIPT)):
        handle = await client.start_workflow(TeamWorkflow.run, ConversationInput(
            team=compiled.spec, task=support.QUESTION), id=f"support-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first = await pending_question(handle)
        run = (await handle.describe()).run_id
        end = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(namespace=client.namespace, maximum_page_size=4,
                                                      execution=WorkflowExecution(workflow_id=handle.id, run_id=run)))
        told = TaskState("INPUT_REQUIRED", question_text(first))
        request = WatchRequest(thread=handle.id, turn=1, last=with_cursor(told, run, newest_kept(end.history.events)),
                               poll_seconds=0.05, watch_seconds=60)

        failing, beats = ActivityEnvironment(client), list[Any]()
        placed = asyncio.Event()

        def heartbeat(*details: Any) -> None:
            beats.extend(details)
            if details and details[0]["last"]:
                placed.set()

        failing.on_heartbeat = heartbeat
        read.append([])
        attempt = asyncio.ensure_future(failing.run(watch_a2a_task, request))
        await placed.wait()  # the history read, and nothing new in it: the watch waits
        failing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await attempt
        assert read[0][0] == 1 and read[0] == sorted(read[0])
        place = beats[-1]

        await send_reply(client, handle.id, first.question_id, text="Order 4711")

        async def approval_asked() -> Question | None:
            asked = [q for q in await questions(handle) if q.question_id != first.question_id]
            return asked[0] if asked else None
        approval = await until(approval_asked, "the refund's approval")
        assert approval is not None
        retried = ActivityEnvironment(client)
        retried.info = dataclasses.replace(retried.info, attempt=2, heartbeat_details=[place])
        read.append([])
        change = await retried.run(watch_a2a_task, request)
        unplaced = ActivityEnvironment(client)  # a place the server does not take: read from the start
        unplaced.info = dataclasses.replace(unplaced.info, attempt=3, heartbeat_details=[{**place, "token": "bm90IGEgdG9rZW4="}])
        read.append([])
        again = await unplaced.run(watch_a2a_task, request)
    assert change.state == "INPUT_REQUIRED"
    status: Any = change.event["statusUpdate"]
    assert status["status"]["message"]["parts"] == [{"text": question_text(approval)}]
    assert read[1] and min(read[1]) == place["last"] + 1  # nothing read twice
    assert (again.signature, again.state) == (change.signature, change.state) and read[2][0] == 1
