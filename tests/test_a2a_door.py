"""A served team as an A2A agent, driven by the `a2a-sdk` client: a support message, the
refund's approval as `input-required` with the question, the answer on the same task,
`completed` with exactly one refund; the worker killed while the task waits."""

from __future__ import annotations

import signal
import uuid
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.core.turn_tasks import NotATask, parse_task_id, task_id
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .worker_process import spawn_worker

pytestmark = pytest.mark.workflow

CARDS = [card_of(support.build().compile().spec)]
TOKEN = {"Authorization": "Bearer s3cret"}


def test_a_task_id_is_the_thread_and_the_turn() -> None:
    assert parse_task_id(task_id("support-ab::c", 3)) == ("support-ab::c", 3)
    for bad in ["", "t", "t::", "t::0", "t::x", "::2", "t::2\n"]:
        with pytest.raises(NotATask):
            parse_task_id(bad)


def message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    tasks = [event.task async for event in agent.send_message(request) if event.HasField("task")]
    return tasks[-1]


async def a2a(url: str) -> Any:
    http = httpx.AsyncClient(headers=TOKEN, timeout=60)
    return await create_client(f"{url}/a2a/support", ClientConfig(streaming=False, httpx_client=http),
                               resolver_http_kwargs={"headers": TOKEN})


def refunds_in(transcript: list[Any]) -> int:
    return sum(1 for m in transcript if m.role == "tool" and m.name == "execute_refund")


@pytest.mark.slow  # over a second: out of the quick loop
async def test_approval_is_input_required_and_the_answer_on_the_same_task_completes_it(
        client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    options: dict[str, Any] = {"tokens": ["s3cret"], "cards": CARDS}
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, **options) as url:
            async with httpx.AsyncClient() as raw:
                card = (await raw.get(f"{url}/a2a/support/.well-known/agent-card.json", headers=TOKEN)).json()
                no_token = await raw.get(f"{url}/a2a/support/.well-known/agent-card.json")
                bad_rpc = await raw.post(f"{url}/a2a/support", content=b'{"jsonrpc": "2.0", "id": 1,',
                                         headers=TOKEN | {"Content-Type": "application/json"})
            agent = await a2a(url)
            asked = await send(agent, message(support.QUESTION))
            approval = await send(agent, message("Order 4711", task_id=asked.id, context_id=asked.context_id))
            unclear = await send(agent, message("maybe", task_id=asked.id, context_id=asked.context_id))
            done = await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
            again = await agent.get_task(pb.GetTaskRequest(id=asked.id))
            listed = await agent.list_tasks(pb.ListTasksRequest(context_id=asked.context_id))
            with pytest.raises(Exception, match=r"has ended \(completed\)"):
                await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
            with pytest.raises(Exception, match="no context 'nothing'"):
                await agent.get_task(pb.GetTaskRequest(id="nothing::1"))
        transcript = await client.get_workflow_handle(asked.context_id).query(TeamWorkflow.transcript, True)

    assert card["name"] == "support" and card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["url"] == f"{url}/a2a/support"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert {skill["name"] for skill in card["skills"]} == set(support.build().compile().spec.agents)
    assert no_token.status_code == 401
    assert bad_rpc.status_code == 200 and bad_rpc.json()["error"]["code"] == -32700
    assert asked.id == task_id(asked.context_id, 1)
    assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert asked.status.message.parts[0].text == ("[triage_agent] Sorry to hear that! What's your order number? "
                                                  "(options: I don't have it)")
    assert approval.id == asked.id and approval.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert "Approve execute_refund(" in approval.status.message.parts[0].text
    assert unclear.status.state == pb.TASK_STATE_INPUT_REQUIRED  # not a plain yes: asked again
    assert done.status.state == pb.TASK_STATE_COMPLETED and again.status.state == pb.TASK_STATE_COMPLETED
    assert done.artifacts[0].parts[0].text == done.status.message.parts[0].text != ""
    assert [t.id for t in listed.tasks] == [asked.id]
    assert len(support.REFUNDS) == 1 and refunds_in(transcript) == 1


@pytest.mark.slow  # starts worker processes
async def test_the_answer_is_taken_after_the_worker_is_killed_while_the_task_waits(
        client: Client, task_queue: str) -> None:
    address = client.service_client.config.target_host
    worker = spawn_worker(address, task_queue)
    try:
        async with running_gateway(client, task_queue, tokens=["s3cret"], cards=CARDS) as url:
            agent = await a2a(url)
            asked = await send(agent, message(support.QUESTION))
            approval = await send(agent, message("Order 4711", task_id=asked.id, context_id=asked.context_id))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        worker = spawn_worker(address, task_queue)
        async with running_gateway(client, task_queue, tokens=["s3cret"], cards=CARDS) as url:
            agent = await a2a(url)
            waiting = await agent.get_task(pb.GetTaskRequest(id=asked.id))
            done = await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
        transcript = await client.get_workflow_handle(asked.context_id).query(TeamWorkflow.transcript, True)
    finally:
        worker.kill()
        worker.wait()

    assert asked.status.state == approval.status.state == waiting.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert "Approve execute_refund(" in waiting.status.message.parts[0].text
    assert done.status.state == pb.TASK_STATE_COMPLETED
    assert refunds_in(transcript) == 1


async def test_streamed_until_input_required_then_cancelled(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, cards=CARDS) as url:
            agent = await create_client(f"{url}/a2a/support", ClientConfig(streaming=True))
            events = [event async for event in agent.send_message(message(support.QUESTION))]
            first = events[0].task
            last = events[-1].status_update.status if events[-1].HasField("status_update") else events[-1].task.status
            cancelled = await agent.cancel_task(pb.CancelTaskRequest(id=first.id))
            after = await agent.get_task(pb.GetTaskRequest(id=first.id))
            with pytest.raises(Exception, match="has ended"):
                await agent.cancel_task(pb.CancelTaskRequest(id=first.id))
            with pytest.raises(Exception, match="has ended"):
                await send(agent, message("Order 1", task_id=first.id, context_id=first.context_id))
            # only the turn was cancelled: the thread takes the next message as its next task
            again = [event async for event in agent.send_message(
                message(support.QUESTION, context_id=first.context_id))]
            second = again[0].task

    assert first.id == task_id(first.context_id, 1)
    assert last.state == pb.TASK_STATE_INPUT_REQUIRED and "order number" in last.message.parts[0].text
    assert cancelled.status.state == after.status.state == pb.TASK_STATE_CANCELED
    assert second.id == task_id(first.context_id, 2)
    assert second.status.state not in (pb.TASK_STATE_CANCELED, pb.TASK_STATE_FAILED)


async def test_a_client_chosen_context_id_names_the_thread_and_lists_are_bounded(client: Client, task_queue: str) -> None:
    wanted = f"support-mine-{uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, cards=CARDS) as url:
            agent = await create_client(f"{url}/a2a/support", ClientConfig(streaming=False))
            asked = await send(agent, message(support.QUESTION, context_id=wanted))
            unknown = await agent.list_tasks(pb.ListTasksRequest(context_id="nobody-here"))
            with pytest.raises(Exception, match="pageSize must be 1 to 100"):
                await agent.list_tasks(pb.ListTasksRequest(page_size=101))
            with pytest.raises(Exception, match="invalid contextId"):
                await send(agent, message("hi", context_id="not a thread id!"))

    assert asked.context_id == wanted and asked.id == task_id(wanted, 1)
    assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert list(unknown.tasks) == []


@pytest.mark.slow  # a gateway of its own
async def test_a_message_id_stands_for_one_message(client: Client, task_queue: str) -> None:
    """A message sent again with its messageId (a client's retry) is that message: its task,
    nothing sent twice, an answer retried after it was taken too; the messageId with other
    text is refused, never a dropped text."""
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            running_gateway(client, task_queue, tokens=["s3cret"], cards=CARDS) as url:
        agent = await a2a(url)
        first = message(support.QUESTION)
        asked = await send(agent, first)
        again = await send(agent, first)
        reused = pb.SendMessageRequest(message=pb.Message(
            message_id=first.message.message_id, role=pb.ROLE_USER, parts=[pb.Part(text="other words")],
            context_id=asked.context_id))
        with pytest.raises(Exception, match="messageId was sent with another message"):
            await send(agent, reused)
        approval = await send(agent, message("Order 4711", task_id=asked.id, context_id=asked.context_id))
        yes = message("yes", task_id=asked.id, context_id=asked.context_id)
        done = await send(agent, yes)
        yes_again = await send(agent, yes)  # after the task completed: the same outcome
        status = await client.get_workflow_handle(asked.context_id).query(TeamWorkflow.status)
    assert again.id == asked.id and again.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert approval.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert done.status.state == yes_again.status.state == pb.TASK_STATE_COMPLETED and yes_again.id == done.id
    assert status.turns == 1 and len(support.REFUNDS) == 1
