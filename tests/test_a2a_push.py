"""A2A push notifications: configs set, read, listed and deleted through the `a2a-sdk` client,
kept by a workflow of the task's (not the gateway: a new gateway delivers what the last one
was told), delivered by an activity to a real local HTTP receiver with the token and the
authentication, retried when the receiver fails; a private address refused unless allowed;
the secrets kept out of memo and search attributes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.doors.a2a.push_configs import (
    ALLOW_PRIVATE_ENV,
    ATTEMPTS_ENV,
    POLL_SECONDS_ENV,
    RETRY_ENV,
    PushOptions,
    push_id,
)
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.a2a_push import PushInput
from durable_teams.workflows.push_targets import address_refusal, url_refusal

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .waiting import until

pytestmark = pytest.mark.workflow

CARDS = [card_of(support.build().compile().spec)]
QUICK = PushOptions(allow_private=True, retry_seconds=0.01, poll_seconds=0.05)
TOKEN = {"Authorization": "Bearer s3cret"}


def message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    return [event.task async for event in agent.send_message(request) if event.HasField("task")][-1]


async def a2a(url: str) -> Any:
    return await create_client(f"{url}/a2a/support", ClientConfig(
        streaming=False, httpx_client=httpx.AsyncClient(headers=TOKEN, timeout=60)),
        resolver_http_kwargs={"headers": TOKEN})


def test_only_public_http_addresses_are_places_to_deliver_to() -> None:
    for address, why in [("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"),
                         ("192.168.0.9", "private"), ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
                         ("::ffff:127.0.0.1", "loopback"), ("100.64.0.1", "shared"), ("0.0.0.0", "unspecified"),
                         ("224.0.0.1", "multicast")]:
        assert address_refusal(address) == why, address
    assert address_refusal("93.184.216.34") is None and address_refusal("2606:4700::1111") is None
    assert url_refusal("https://example.com/hook") is None
    for url in ["ftp://example.com/x", "file:///etc/passwd", "http:///x", "not a url", "http://u:p@example.com/",
                "http://example.com:99999/"]:
        assert url_refusal(url), url


def test_push_options_come_from_the_gateway_s_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (ALLOW_PRIVATE_ENV, RETRY_ENV, ATTEMPTS_ENV, POLL_SECONDS_ENV):
        monkeypatch.delenv(env, raising=False)
    assert PushOptions.from_env() == PushOptions(allow_private=False, retry_seconds=1.0, attempts=8, poll_seconds=1.0)
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "yes")
    monkeypatch.setenv(RETRY_ENV, "0.25")
    monkeypatch.setenv(ATTEMPTS_ENV, "3")
    monkeypatch.setenv(POLL_SECONDS_ENV, "2")
    assert PushOptions.from_env() == PushOptions(allow_private=True, retry_seconds=0.25, attempts=3, poll_seconds=2.0)
    for env, value, says in [(RETRY_ENV, "soon", "is not a number"), (ATTEMPTS_ENV, "2.5", "is not an integer"),
                             (RETRY_ENV, "0", "retry_seconds must be within"),
                             (ATTEMPTS_ENV, "0", "attempts must be within"),
                             (POLL_SECONDS_ENV, "-1", "poll_seconds must be within"),
                             (RETRY_ENV, "nan", "retry_seconds must be within")]:
        with monkeypatch.context() as patched:
            patched.setenv(env, value)
            with pytest.raises(ValueError, match=says):
                PushOptions.from_env()
    with pytest.raises(ValueError, match="attempts must be within"):
        PushOptions(attempts=101)


@pytest.mark.slow  # a whole support conversation, two gateways and a receiver
async def test_push_configs_are_kept_by_a_workflow_and_delivered_with_retries(
        client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    # the receiver listens on loopback; a retry 10 ms after a failure (no real backoff waited)
    options: dict[str, Any] = {"tokens": ["s3cret"], "cards": CARDS, "a2a_push": QUICK}
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            receiving() as receiver:
        async with running_gateway(client, task_queue, **options) as url:
            agent = await a2a(url)
            card = (await httpx.AsyncClient().get(f"{url}/a2a/support/.well-known/agent-card.json",
                                                   headers=TOKEN)).json()
            asked = await send(agent, message(support.QUESTION))
            config = pb.TaskPushNotificationConfig(task_id=asked.id, url=receiver.url, token="push-token-1",
                                                   authentication=pb.AuthenticationInfo(scheme="Bearer",
                                                                                        credentials="cred-2"))
            made = await agent.create_task_push_notification_config(config)

            async def told(n: int) -> bool:
                return len(receiver.received) >= n
            await until(lambda: told(1), "the question the task asks when the config is set")
            other = await agent.create_task_push_notification_config(pb.TaskPushNotificationConfig(
                task_id=asked.id, id="second", url=receiver.url))
            await until(lambda: told(2), "the question told to the second config too")
            listed = await agent.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=asked.id))
            got = await agent.get_task_push_notification_config(
                pb.GetTaskPushNotificationConfigRequest(task_id=asked.id, id=made.id))
            await agent.delete_task_push_notification_config(
                pb.DeleteTaskPushNotificationConfigRequest(task_id=asked.id, id="second"))
            with pytest.raises(Exception, match="no push notification config 'second'"):
                await agent.get_task_push_notification_config(
                    pb.GetTaskPushNotificationConfigRequest(task_id=asked.id, id="second"))
            with pytest.raises(Exception, match="no context"):
                await agent.create_task_push_notification_config(pb.TaskPushNotificationConfig(
                    task_id="support-nobody::1", url=receiver.url))
        receiver.answers = [503]  # the first delivery fails: retried
        async with running_gateway(client, task_queue, **options) as url:  # another gateway answers
            agent = await a2a(url)
            await send(agent, message("Order 4711", task_id=asked.id, context_id=asked.context_id))
            await until(lambda: told(4), "the approval's notification, after one failed delivery")
            await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
            await until(lambda: told(5), "the completion's notification")
        described = await client.get_workflow_handle(push_id(asked.id)).describe()
        history = await client.get_workflow_handle(push_id(asked.id)).fetch_history()

    assert card["capabilities"]["pushNotifications"] is True
    assert made.id and made.url == receiver.url and made.token == "push-token-1"
    assert other.id == "second" and {c.id for c in listed.configs} == {made.id, "second"} and got == made
    states = [body["statusUpdate"]["status"]["state"] for _, body in receiver.received]
    # the question asked when each config was set (the second, set after the first was told it,
    # is told it too, once), the approval (refused once, then taken) and the end
    assert states == ["TASK_STATE_INPUT_REQUIRED"] * 4 + ["TASK_STATE_COMPLETED"]
    assert receiver.statuses == [200, 200, 503, 200, 200]
    first, again = (receiver.received[i][1]["statusUpdate"]["status"]["message"] for i in (0, 1))
    assert again == first  # the same status message (its messageId too)
    assert receiver.received[0][1]["statusUpdate"]["status"]["message"]["parts"][0]["text"] == \
        asked.status.message.parts[0].text
    started, = await client.data_converter.decode(
        history.events[0].workflow_execution_started_event_attributes.input.payloads, [PushInput])
    assert (started.retry_seconds, started.poll_seconds, started.allow_private) == (0.01, 0.05, True)
    approval = receiver.received[3][1]["statusUpdate"]
    assert approval["taskId"] == asked.id and approval["contextId"] == asked.context_id
    assert "Approve execute_refund(" in approval["status"]["message"]["parts"][0]["text"]
    tokens = [(h.get("X-A2A-Notification-Token"), h.get("Authorization")) for h, _ in receiver.received]
    assert tokens == [("push-token-1", "Bearer cred-2"), (None, None)] + [("push-token-1", "Bearer cred-2")] * 3
    assert len(support.REFUNDS) == 1
    memo = await described.memo()
    kept_in_clear = f"{described.id} {memo} {described.search_attributes} {described.typed_search_attributes}"
    assert "push-token-1" not in kept_in_clear and "cred-2" not in kept_in_clear
    summaries = [str(e.user_metadata) for e in history.events if e.HasField("user_metadata")]
    assert summaries and not any("push-token-1" in s or "cred-2" in s for s in summaries)


@pytest.mark.slow  # two conversations
async def test_a_private_address_is_refused_unless_the_operator_allows_it(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            running_gateway(client, task_queue, tokens=["s3cret"], cards=CARDS) as url:
        agent = await a2a(url)
        asked = await send(agent, message(support.QUESTION))
        refused = {}
        for hook in ["http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "http://10.0.0.1/x",
                     "ftp://example.com/x"]:
            with pytest.raises(Exception) as caught:
                await agent.create_task_push_notification_config(pb.TaskPushNotificationConfig(
                    task_id=asked.id, url=hook))
            refused[hook] = str(caught.value)
        listed = await agent.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=asked.id))
        await client.get_workflow_handle(asked.context_id).terminate("test over")  # no inbox lists it
        # a message carrying a config: refused before it goes in when the config is; kept with its task else
        unsent = f"support-unsent-{uuid.uuid4().hex[:8]}"
        with_private = message(support.QUESTION, context_id=unsent)
        with_private.configuration.task_push_notification_config.url = "http://10.0.0.1/x"
        with pytest.raises(Exception, match="private address"):
            await send(agent, with_private)
        with_public = message(support.QUESTION)
        with_public.configuration.task_push_notification_config.url = "http://93.184.216.34/hook"
        carried = await send(agent, with_public)
        carried_configs = await agent.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=carried.id))
        await client.get_workflow_handle(carried.context_id).terminate("test over")
        await client.get_workflow_handle(push_id(carried.id)).terminate("test over")  # no delivery out of here
        started = [wf.id async for wf in client.list_workflows(f'WorkflowId = "{unsent}"')]
        streamed = await create_client(f"{url}/a2a/support", ClientConfig(
            streaming=True, httpx_client=httpx.AsyncClient(headers=TOKEN, timeout=60)),
            resolver_http_kwargs={"headers": TOKEN})
        streamed_public = message(support.QUESTION)
        streamed_public.configuration.task_push_notification_config.url = "http://93.184.216.34/hook"
        events = [e async for e in streamed.send_message(streamed_public)]
        streamed_task = events[0].task
        streamed_configs = await agent.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=streamed_task.id))
        await client.get_workflow_handle(streamed_task.context_id).terminate("test over")
        await client.get_workflow_handle(push_id(streamed_task.id)).terminate("test over")

    assert "loopback address" in refused["http://127.0.0.1:9/hook"]
    assert "link-local address" in refused["http://169.254.169.254/latest"]
    assert "private address" in refused["http://10.0.0.1/x"]
    assert "not an http(s) URL" in refused["ftp://example.com/x"]
    assert list(listed.configs) == []
    assert started == []  # the refused message started nothing
    assert [c.url for c in carried_configs.configs] == ["http://93.184.216.34/hook"]
    assert [c.url for c in streamed_configs.configs] == ["http://93.184.216.34/hook"]  # a stream's too
