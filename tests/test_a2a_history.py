"""A2A task history (`historyLength` of GetTask, SendMessage's configuration and ListTasks),
read from the thread's log: the turn's message, the answers to its questions, what the agents
said; and ListTasks' artifacts only when asked for."""

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
from durable_teams.gateway.doors.a2a.wire import history_of
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.messages import Message, ToolCall

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = pytest.mark.workflow

CARDS = [card_of(support.build().compile().spec)]


def message(text: str, history: int | None = None, **ids: str) -> pb.SendMessageRequest:
    request = pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                       parts=[pb.Part(text=text)], **ids))
    if history is not None:
        request.configuration.history_length = history
    return request


async def send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    return [event.task async for event in agent.send_message(request) if event.HasField("task")][-1]


def said(task: pb.Task) -> list[tuple[str, str]]:
    return [(pb.Role.Name(m.role), m.parts[0].text) for m in task.history]


def test_history_keeps_what_people_and_agents_said_and_leaves_the_working_out() -> None:
    log = [
        (4, Message(role="user", content="hi")),
        (5, Message(role="assistant", content="", tool_calls=[ToolCall(id="c", name="ask_human", arguments="{}")])),
        (6, Message(role="tool", content="4711", kind="human", tool_call_id="c")),
        (7, Message(role="assistant", content="routed", kind="routing")),
        (8, Message(role="tool", content="item_1", name="look_up_item", tool_call_id="d")),
        (9, Message(role="user", content="an agent's private brief", agent_run=2)),
        (10, Message(role="assistant", content="Done.", agent_run=2)),
        (11, Message(role="system", content="a notice", kind="notice")),
    ]
    history = history_of("t", 3, log)
    assert [(pb.Role.Name(m.role), m.parts[0].text) for m in history] == [
        ("ROLE_USER", "hi"), ("ROLE_USER", "4711"), ("ROLE_AGENT", "Done.")]
    assert [m.message_id for m in history] == ["t::3-m4", "t::3-m6", "t::3-m10"]
    assert {m.task_id for m in history} == {"t::3"} and {m.context_id for m in history} == {"t"}


@pytest.mark.slow  # a whole support conversation, over a second
async def test_get_task_and_send_return_the_turns_history(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, cards=CARDS) as url:
            agent = await create_client(f"{url}/a2a/support", ClientConfig(
                streaming=False, httpx_client=httpx.AsyncClient(timeout=60)))
            asked = await send(agent, message(support.QUESTION))
            ids = {"task_id": asked.id, "context_id": asked.context_id}
            approval = await send(agent, message("Order 4711", history=0, **ids))
            done = await send(agent, message("yes", history=2, **ids))
            whole = await agent.get_task(pb.GetTaskRequest(id=asked.id))
            last = await agent.get_task(pb.GetTaskRequest(id=asked.id, history_length=1))
            none = await agent.get_task(pb.GetTaskRequest(id=asked.id, history_length=0))
            with pytest.raises(Exception, match="historyLength must be 0 or more"):
                await agent.get_task(pb.GetTaskRequest(id=asked.id, history_length=-1))
            listed = await agent.list_tasks(pb.ListTasksRequest(context_id=asked.context_id))
            listed_full = await agent.list_tasks(pb.ListTasksRequest(
                context_id=asked.context_id, history_length=1, include_artifacts=True))
            with pytest.raises(Exception, match="pageSize must be 1 to 100"):
                await agent.list_tasks(pb.ListTasksRequest(page_size=0))
            with pytest.raises(Exception, match="no such pageToken"):
                await agent.list_tasks(pb.ListTasksRequest(page_token="2"))
            second = await send(agent, message("Thanks", context_id=asked.context_id))
            one_of_two = await agent.list_tasks(pb.ListTasksRequest(context_id=asked.context_id, page_size=1))
            two_of_two = await agent.list_tasks(pb.ListTasksRequest(
                context_id=asked.context_id, page_size=1, page_token=one_of_two.next_page_token))
            async with httpx.AsyncClient() as raw:
                bad_status = (await raw.post(f"{url}/a2a/support", json={
                    "jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"status": "NOT_A_STATE"}},
                    headers={"A2A-Version": "1.0"})).json()

    assert said(asked) == [("ROLE_USER", support.QUESTION)]  # the question is the status, not history
    assert said(approval) == []
    assert done.status.state == pb.TASK_STATE_COMPLETED
    assert said(whole) == [("ROLE_USER", support.QUESTION), ("ROLE_USER", "Order 4711"),
                           ("ROLE_AGENT", "Done: your boots are refunded."), ("ROLE_AGENT", support.ANSWER)]
    assert said(done) == said(whole)[-2:] and said(last) == said(whole)[-1:] and said(none) == []
    assert not listed.tasks[0].history and not listed.tasks[0].artifacts and listed.page_size == 1
    assert said(listed_full.tasks[0]) == said(whole)[-1:]
    assert listed_full.tasks[0].artifacts[0].parts[0].text == support.ANSWER
    assert [t.id for t in one_of_two.tasks] == [second.id] and one_of_two.total_size == 2
    assert one_of_two.page_size == 1 and one_of_two.next_page_token
    assert [t.id for t in two_of_two.tasks] == [asked.id] and two_of_two.next_page_token == ""
    assert bad_status["error"]["code"] == -32602 and "is not a task state" in bad_status["error"]["message"]
    assert len(support.REFUNDS) == 1
