"""A2A push notifications follow the conversation's event log, whatever the timing: a watch
whose reading of the task's state lags behind the conversation (a loaded machine: the state is
read only after the approval was asked, answered and the turn completed) still tells the
approval, then the completion, in that order. A state is told because the history holds it,
never because a read happened to fall inside it."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from temporalio.client import Client

from durable_teams.activities import a2a_push_delivery
from durable_teams.examples import support
from durable_teams.gateway.doors.a2a.push_configs import PushOptions
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.turn_view import TurnState

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .test_a2a_exact import CARDS, Rpc, push_activities, said
from .waiting import NotYet, until

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

    async def late_state(thread: str, turn: int) -> TurnState:
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
        approval = await rpc.task(said("Order 4711", taskId=asked["id"]))
        assert approval["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = await rpc.task(said("yes", taskId=asked["id"]))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert receiver.received == []  # nothing was told while no state could be read
        ended.set()

        async def both_told() -> bool:
            if len(receiver.received) < 2:
                raise NotYet(states_of(receiver.received))
            return True
        try:
            await until(both_told, "the approval's and the completion's notifications")
        except AssertionError as missing:
            raise AssertionError(f"{missing}: {await push_activities(client, asked['id'])}") from None
    assert states_of(receiver.received) == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    told = receiver.received[0][1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert "Approve execute_refund(" in told and len(support.REFUNDS) == 1
