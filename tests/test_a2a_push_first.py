"""What a new A2A push config is told first (durable_teams/gateway/doors/a2a/push_start.py): a
config carried by a message whose task ended before the config was stored (a fast model) is
told the end; a config set on an ended task is told its end, once (a second one too, once the
task's push workflow has told the first); a config set while the task asks is told that
question once, then what follows. Each delivery names the task and context
by the caller's own ids, and another tenant cannot set a config on the task."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.a2a.door import A2ADoor, name_of
from durable_teams.gateway.doors.a2a.push_configs import PushOptions, push_id
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows.a2a_tasks import FINAL

from .a2a_rpc import CARDS, Rpc, said
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import Receiver, receiving
from .waiting import NotYet, until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a worker, a gateway and a receiver each

QUICK = PushOptions(allow_private=True, retry_seconds=0.01, poll_seconds=0.05)
RUN = uuid.uuid4().hex[:6]  # this run's own scopes: no other test's task is listed as theirs
SHOP = f"shop{RUN}"
TOKENS = [Token("tok-shop", SHOP), Token("tok-crm", f"crm{RUN}")]
AT_ONCE = ScriptedModel({"triage_agent": [say("Refunded: the money is on its way.")]})
"""A model that answers at once: the turn ends with its first model call."""


def rpc_for(url: str, token: str) -> Rpc:
    return Rpc(httpx.AsyncClient(base_url=url, timeout=60, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {token}"}))


def updates(receiver: Receiver) -> list[dict[str, Any]]:
    return [body["statusUpdate"] for _, body in receiver.received]


async def told(receiver: Receiver, count: int) -> bool:
    if len(receiver.received) < count:
        raise NotYet([u["status"]["state"] for u in updates(receiver)])
    return True


async def delivered_once_and_done(client: Client, task: str) -> int:
    """How many deliveries the task's push workflow made, once it waits out its linger (the
    task ended: it schedules nothing more)."""
    handle = client.get_workflow_handle(push_id(task))

    async def lingering() -> list[Any]:
        events = (await handle.fetch_history()).events
        if not any(e.event_type == EventType.EVENT_TYPE_TIMER_STARTED for e in events):
            raise NotYet([EventType.Name(e.event_type) for e in events][-5:])
        return events
    events = await until(lingering, "the push workflow lingering after the task's end")
    return sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
               and e.activity_task_scheduled_event_attributes.activity_type.name == "deliver_a2a_push")


def assert_names_the_task(update: dict[str, Any], task: dict[str, Any], state: str) -> None:
    """A delivery names the task and context by the caller's ids, as `GetTask` shows them."""
    assert (update["taskId"], update["contextId"]) == (task["id"], task["contextId"])
    assert update["status"]["state"] == state
    message = update["status"]["message"]
    assert (message["taskId"], message["contextId"]) == (task["id"], task["contextId"])
    assert message["messageId"].startswith(f"{task['id']}-")


async def test_a_config_a_message_carried_is_told_the_end_its_task_reached_before_it_was_stored(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_with_push = A2ADoor.with_push

    async def after_the_end(self: A2ADoor, thread: str, number: int, scope: str | None, config: Any) -> None:
        """The config stored only once the turn has ended (a model faster than the gateway)."""
        async def ended() -> bool:
            return name_of(await self.task(thread, number, scope)) in FINAL
        await until(ended, "the turn's end, before its push config is stored")
        await real_with_push(self, thread, number, scope, config)

    monkeypatch.setattr(A2ADoor, "with_push", after_the_end)
    async with running_worker(client, task_queue, [support.build().compile()], AT_ONCE), receiving() as receiver, \
            running_gateway(client, task_queue, tokens=TOKENS, cards=CARDS, a2a_push=QUICK) as url:
        shop = rpc_for(url, "tok-shop")
        answer = await shop.call("SendMessage", {"message": said(support.QUESTION), "configuration": {
            "taskPushNotificationConfig": {"url": receiver.url, "token": "t-1"}}})
        task = answer["result"]["task"]
        await until(lambda: told(receiver, 1), "the completion's notification")
        deliveries = await delivered_once_and_done(client, f"{SHOP}:{task['contextId']}::1")
        await shop.http.aclose()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and not task["contextId"].startswith(SHOP)
    assert deliveries == 1 and len(receiver.received) == 1
    assert receiver.received[0][0]["X-A2A-Notification-Token"] == "t-1"
    assert_names_the_task(updates(receiver)[0], task, "TASK_STATE_COMPLETED")
    assert updates(receiver)[0]["status"]["message"]["parts"] == [{"text": "Refunded: the money is on its way."}]


async def test_a_config_set_on_an_ended_task_is_told_its_end_once_and_only_by_its_tenant(
        client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [support.build().compile()], AT_ONCE), receiving() as receiver, \
            running_gateway(client, task_queue, tokens=TOKENS, cards=CARDS, a2a_push=QUICK) as url:
        shop, crm = rpc_for(url, "tok-shop"), rpc_for(url, "tok-crm")
        task = await shop.task(said(support.QUESTION))
        refused = await crm.refused("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url},
                                    -32001)
        made = await shop.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url})
        await until(lambda: told(receiver, 1), "the end of the task the config was set on")
        late = await shop.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], "id": "late",
                                                                    "url": receiver.url, "token": "late"})
        await until(lambda: told(receiver, 2), "the end told to a config set after it was told")
        deliveries = await delivered_once_and_done(client, f"{SHOP}:{task['contextId']}::1")
        listed = await shop.call("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
        for rpc in (shop, crm):
            await rpc.http.aclose()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "result" in made, made
    assert refused  # TaskNotFoundError: another tenant's task is as good as missing
    assert "result" in late, late
    assert deliveries == 2 and len(receiver.received) == 2  # the end, once to each config
    assert [h.get("X-A2A-Notification-Token") for h, _ in receiver.received] == [None, "late"]
    for update in updates(receiver):
        assert_names_the_task(update, task, "TASK_STATE_COMPLETED")
    assert sorted(c.get("id", "") != "late" for c in listed["result"]["configs"]) == [False, True]  # kept


async def test_a_config_set_while_the_task_asks_is_told_that_question_once_then_what_follows(
        client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            receiving() as receiver, \
            running_gateway(client, task_queue, tokens=TOKENS, cards=CARDS, a2a_push=QUICK) as url:
        shop = rpc_for(url, "tok-shop")
        asked = await shop.task(said(support.QUESTION))
        made = await shop.call("CreateTaskPushNotificationConfig", {"taskId": asked["id"], "url": receiver.url})
        await until(lambda: told(receiver, 1), "the question the task asks when the config is set")
        approval = await shop.task(said("Order 4711", taskId=asked["id"]))
        await until(lambda: told(receiver, 2), "the approval's notification")
        done = await shop.task(said("yes", taskId=asked["id"]))
        await until(lambda: told(receiver, 3), "the completion's notification")
        deliveries = await delivered_once_and_done(client, f"{SHOP}:{asked['contextId']}::1")
        await shop.http.aclose()
    assert "result" in made, made
    assert asked["status"]["state"] == approval["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and len(support.REFUNDS) == 1
    told_states = [u["status"]["state"] for u in updates(receiver)]
    assert told_states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    assert deliveries == 3
    texts = [u["status"]["message"]["parts"][0]["text"] for u in updates(receiver)]
    assert texts[0] == asked["status"]["message"]["parts"][0]["text"] and "order number" in texts[0]
    assert texts[1] == approval["status"]["message"]["parts"][0]["text"] and "Approve execute_refund(" in texts[1]
    for update in updates(receiver):
        assert (update["taskId"], update["contextId"]) == (asked["id"], asked["contextId"])
