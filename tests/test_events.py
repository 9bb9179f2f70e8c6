"""The event stream: a conversation's steps, typed, read while they happen."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.client.events import Event, events_of, follow
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, ToolCall
from durable_teams.workflows.state import ConversationInput, HumanReply

from .cli_process import cli
from .conftest import running_worker

pytestmark = pytest.mark.workflow


def test_each_message_kind_maps_to_its_event() -> None:
    table = [
        (Message(role="user", content="hi", name="ana"), [("user_message", "ana", None, "hi")]),
        (Message(role="assistant", name="sup", content="thinking", tool_calls=[
            ToolCall(id="1", name="transfer_to_maths", arguments="{}"),
            ToolCall(id="2", name="ask_human", arguments='{"question": "which?"}')]),
         [("ai_message", "sup", None, "thinking"), ("tool_usage", "sup", "transfer_to_maths", ""),
          ("question", "sup", "ask_human", "")]),
        (Message(role="tool", name="transfer_to_maths", content="Transferred", tool_call_id="1", kind="handoff"),
         [("handoff", None, "transfer_to_maths", "Transferred")]),
        (Message(role="tool", name="add", content="5", tool_call_id="3", agent_run=2), [("tool_response", None, "add", "5")]),
        (Message(role="tool", name="add", content="Error: x", tool_call_id="4", kind="error"),
         [("error", None, "add", "Error: x")]),
        (Message(role="assistant", name="sup", content="Routing to maths", kind="routing"),
         [("routing", "sup", None, "Routing to maths")]),
        (Message(role="user", name="router", content="not JSON", kind="routing", agent_run=3),
         [("routing", "router", None, "not JSON")]),
        (Message(role="system", name="durable-teams", content="Refused signal close: ...", kind="notice"),
         [("error", "durable-teams", None, "Refused signal close: ...")]),
    ]
    for message, expected in table:
        got = [(e.type, e.agent, e.tool, e.text) for e in events_of(7, message)]
        assert got == expected, message
    private = events_of(7, Message(role="tool", name="add", content="5", tool_call_id="3", agent_run=2))
    assert private[0].private and private[0].index == 7


def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "user":
        return call("ask_human", question="Which order?")
    if last["content"].startswith("order "):
        return say(f"Good news: {last['content']}")
    return call("lookup", order=last["content"])


@pytest.mark.slow  # starts a process
async def test_follow_streams_steps_while_the_conversation_runs(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("desk", "Help.", tools=["ask_human", lookup])], name="desk").compile()
    wid = f"follow-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [team], ScriptedModel(desk_script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="where is my parcel?"),
            id=wid, task_queue=task_queue)
        seen: list[Event] = []
        async for event in follow(client, wid, poll_seconds=0.05):
            seen.append(event)
            if event.type == "question":  # live: the workflow is still waiting for this answer
                pending = await handle.query(TeamWorkflow.pending_questions)
                assert [q.text for q in pending] == ["Which order?"]
                await handle.execute_update(
                    TeamWorkflow.answer, HumanReply(question_id=pending[0].question_id, text="A-17"))
        result = await handle.result()
        out = await cli(client, "follow", wid, task_queue=task_queue)

    assert [(e.type, e.agent or e.tool, e.text) for e in seen] == [
        ("user_message", None, "where is my parcel?"),
        ("question", "desk", ""),
        ("tool_response", "ask_human", "A-17"),
        ("tool_usage", "desk", ""),
        ("tool_response", "lookup", "order A-17: shipped"),
        ("ai_message", "desk", "Good news: order A-17: shipped"),
        ("done", None, "COMPLETED"),
    ]
    assert [e.index for e in seen[:-1]] == [0, 1, 2, 3, 4, 5]
    assert result.answer == "Good news: order A-17: shipped"
    assert "question      [desk] ask_human({\"question\": \"Which order?\"})" in out
    assert "tool_response [lookup] order A-17: shipped" in out
    assert out.rstrip().endswith("(workflow completed)")


def test_a_workers_answer_that_joined_the_shared_conversation_is_shown_as_shared() -> None:
    from durable_teams.cli.console import format_event

    answer = Message(role="assistant", name="math_expert", content="It is 1,977,586.", scope=2)
    step = Message(role="tool", name="add", content="231317.0\n(rounded)", tool_call_id="c1", scope=2)
    assert [format_event(e) for e in events_of(9, answer, shared=True)] == [
        "ai_message    [math_expert] It is 1,977,586."]
    assert [format_event(e) for e in events_of(8, step, shared=False)] == [
        "    tool_response [add] 231317.0\n"
        "                        (rounded)"]
    assert events_of(9, answer)[0].private  # by default: where it was written
