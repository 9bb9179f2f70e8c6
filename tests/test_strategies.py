"""Routing strategies in a running conversation: model-free strategies route without a model
call, "llm-decision" asks, retries and fails cleanly, and every decision is readable in the
history (a memo change event) as well as in the transcript."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from durable_teams.client.send import send_turn, submit_turn
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor
from durable_teams.worker.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest, RoutingRule
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import running_worker
from .waiting import pending_question

pytestmark = pytest.mark.workflow


def team(strategy: str, **options: Any) -> CompiledTeam:
    orders = Agent("orders", "Order questions.", description="order status, refunds", skills=["order", "refund"])
    maths = Agent("maths", "Arithmetic.", description="sums and products", skills=["add", "multiply"])
    return Supervisor([orders, maths], strategy=strategy, name=f"t-{strategy}",  # type: ignore[arg-type]
                      tools=["ask_human", "list_agents"], **options).compile()


def echo_worker(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    """Workers answer with their name and the last user text they see."""
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return say(f"{req.agent}: {user}")


def scripted(supervisor: list[Step]) -> ScriptedModel:
    def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        if req.agent == "supervisor":
            return supervisor[min(req.agent_call_index, len(supervisor) - 1)]  # then the last, again
        return echo_worker(req, messages, tools)
    return ScriptedModel(script)


async def conversation(client: Client, task_queue: str, compiled: CompiledTeam) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False),
        id=f"route-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def routing_memos(handle: WorkflowHandle) -> list[dict[str, Any]]:
    """The `last_routing` memo of every memo-change event in the history, in order."""
    found = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
            if "last_routing" in fields:  # (the pending questions are a memo too)
                found.append(json.loads(fields["last_routing"].data))
    return found


def calls_by(model: ScriptedModel) -> list[str]:
    return [req.agent for req, _, _ in model.requests]


async def test_rules_route_without_any_model_call_by_the_supervisor(client: Client, task_queue: str) -> None:
    compiled = team("rules", rules=[RoutingRule(target="maths", keywords=["add", "sum"]),
                                    RoutingRule(target="orders", pattern=r"order\s+#?\d+")],
                    fallback_agent="orders")
    model = scripted([])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        texts = ["please add 2 and 3", "where is order #42?", "hello there"]
        replies = [await send_turn(client, handle.id, t) for t in texts]
        status = await handle.query(TeamWorkflow.status)
        transcript = await handle.query(TeamWorkflow.transcript)
        memos = await routing_memos(handle)

    assert [(r.agent, r.text) for r in replies] == [
        ("maths", "maths: please add 2 and 3"), ("orders", "orders: where is order #42?"),
        ("orders", "orders: hello there")]
    assert calls_by(model) == ["maths", "orders", "orders"]  # never the supervisor
    assert [m["target"] for m in memos] == ["maths", "orders", "orders"]
    assert all(m["strategy"] == "rules" for m in memos)
    assert status.last_decision is not None and status.last_decision.target == "orders"
    records = [m.content or "" for m in transcript if m.kind == "routing"]
    assert len(records) == 3 and records[0].startswith("Routing to maths (rules")
    # Routing records are for people: no worker is shown one.
    for _, messages, _ in model.requests:
        assert not any("Routing to" in (m.get("content") or "") for m in messages)


async def test_round_robin_and_load_balanced_take_turns(client: Client, task_queue: str) -> None:
    robin, balanced = team("round-robin"), team("load-balanced")
    model = scripted([])
    async with running_worker(client, task_queue, [robin, balanced], model):
        got = {}
        for compiled in (robin, balanced):
            handle = await conversation(client, task_queue, compiled)
            # An @mention assigns work too: load-balanced counts it, round-robin does not.
            first = await send_turn(client, handle.id, "@orders hi")
            rest = [await send_turn(client, handle.id, f"task {i}") for i in range(3)]
            got[compiled.spec.name] = [first.agent] + [r.agent for r in rest]
    assert got["t-round-robin"] == ["orders", "orders", "maths", "orders"]
    assert got["t-load-balanced"] == ["orders", "maths", "orders", "maths"]
    assert "supervisor" not in calls_by(model)


DECISION = '{"target": "orders", "reasoning": "an order question", "confidence": 0.9}'


async def test_llm_decision_asks_the_person_before_routing(client: Client, task_queue: str) -> None:
    """AgentForge's case: the supervisor asks for the order number, then routes to orders,
    which sees the person's answer."""
    compiled = team("llm-decision")
    model = scripted([call("ask_human", question="What is your order number?"), say(DECISION)])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        turn = await submit_turn(client, handle.id, "my order has not arrived")
        question = await pending_question(handle)
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="A-123"))
        reply = await turn.reply()
        memos = await routing_memos(handle)

    assert question.agent == "supervisor" and question.text == "What is your order number?"
    assert (reply.agent, reply.status) == ("orders", "completed")
    assert calls_by(model) == ["supervisor", "supervisor", "orders"]
    sup_req, sup_messages, sup_tools = model.requests[0]
    assert sup_req.output_schema is not None
    assert sup_req.output_schema["properties"]["target"]["enum"] == ["orders", "maths"]
    assert [t["function"]["name"] for t in sup_tools] == ["ask_human", "list_agents"]  # no handoffs
    assert '"target": "<agent name>"' in sup_messages[0]["content"]
    _, worker_messages, _ = model.requests[2]
    assert any(m["role"] == "tool" and m["content"] == "A-123" for m in worker_messages)
    assert not any(DECISION == m.get("content") for m in worker_messages)  # the JSON stays private
    assert memos == [{"target": "orders", "strategy": "llm-decision", "reasoning": "an order question",
                      "confidence": 0.9}]


async def test_llm_decision_bad_target_is_corrected_on_the_second_try(client: Client, task_queue: str) -> None:
    compiled = team("llm-decision")
    model = scripted([say('{"target": "billing", "reasoning": "money"}'),
                      say("```json\n" + DECISION + "\n```")])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        reply = await send_turn(client, handle.id, "refund my order")
        transcript = await handle.query(TeamWorkflow.transcript, True)  # full log

    assert (reply.agent, reply.text) == ("orders", "orders: refund my order")
    _, second, _ = model.requests[1]
    feedback = second[-1]
    assert feedback["role"] == "user" and "'billing' is not an agent of this team" in feedback["content"]
    assert "orders, maths" in feedback["content"]
    _, worker_view, _ = model.requests[2]
    assert not any("billing" in (m.get("content") or "") for m in worker_view)
    attempts = [m for m in transcript if m.kind == "routing" and m.role == "assistant" and m.agent_run != 0]
    assert len(attempts) == 2


async def test_llm_decision_always_bad_fails_the_turn_cleanly(client: Client, task_queue: str) -> None:
    compiled = team("llm-decision", decision_max_retries=2)
    model = scripted([say("I think orders should handle it")] * 3 + [say(DECISION)])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        failed = await send_turn(client, handle.id, "hi")
        after = await send_turn(client, handle.id, "my order?")  # the conversation goes on

    assert failed.status == "failed"
    assert "no usable routing decision in 3 attempts" in failed.text
    assert "not JSON" in failed.text
    assert calls_by(model)[:3] == ["supervisor"] * 3  # 1 try + 2 retries, then stop
    assert (after.agent, after.status) == ("orders", "completed")


async def test_llm_decision_tool_rounds_are_bounded(client: Client, task_queue: str) -> None:
    compiled = team("llm-decision", decision_max_tool_rounds=1)
    model = scripted([call("list_agents"), call("list_agents"), say(DECISION)])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        reply = await send_turn(client, handle.id, "which agent?")

    assert reply.agent == "orders"
    _, second, _ = model.requests[1]
    assert second[-1]["role"] == "tool" and "orders" in second[-1]["content"]  # round 1 ran
    _, third, _ = model.requests[2]
    assert third[-2]["role"] == "tool" and third[-2]["content"].startswith("Not run: the 1 tool rounds")
    assert third[-1]["role"] == "user" and "No more tool calls: decide now" in third[-1]["content"]



@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_decision_waiting_for_a_person_survives_continue_as_new(client: Client, task_queue: str) -> None:
    compiled = team("llm-decision")
    compiled.spec.continue_as_new_after_events = 40
    model = scripted([call("ask_human", question="What is your order number?"), say(DECISION)])
    async with running_worker(client, task_queue, [compiled], model):
        handle = await conversation(client, task_queue, compiled)
        latest = client.get_workflow_handle_for(TeamWorkflow.run, handle.id)
        asking = asyncio.ensure_future(send_turn(client, handle.id, "where is my order?"))
        question = await pending_question(latest)
        first_run = (await latest.describe()).run_id
        # Queued turns grow the history until the run continues as new, the question pending.
        queued = []
        for n in range(30):
            queued.append(f"later {n}")
            await submit_turn(client, handle.id, queued[-1], turn_id=queued[-1])
            if (await latest.describe()).run_id != first_run:
                break
        assert (await latest.describe()).run_id != first_run, "never continued as new"
        assert await pending_question(latest) == question
        await latest.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="A-9"))
        reply = await asking
        later = [await send_turn(client, handle.id, t, turn_id=t) for t in queued]

    assert (reply.agent, reply.status) == ("orders", "completed")
    assert calls_by(model)[:3] == ["supervisor", "supervisor", "orders"]  # asked once, decided once
    _, worker_view, _ = model.requests[2]
    assert any(m["role"] == "tool" and m["content"] == "A-9" for m in worker_view)
    assert all(r.status == "completed" for r in later)  # each later turn decided and answered
