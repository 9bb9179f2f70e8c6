"""Multi-turn threads: turns by update, swarm handoffs that stay active between turns, context
variables per thread, and ABI's conveniences (@agent, request_help, templates, return_direct)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

from durable_teams.activities.tool_results import Result
from durable_teams.client.send import send_turn
from durable_teams.examples import acme, faang, support
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm, handoff
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput, HumanReply, UserTurn

from .conftest import running_worker
from .waiting import pending_question

pytestmark = pytest.mark.workflow


async def start(client: Client, task_queue: str, team: CompiledTeam, **inp: Any) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False, **inp),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


def echo(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    return say(f"{req.agent} heard: {messages[-1]['content']}")


def shared(transcript: list[Message]) -> list[tuple[str, str]]:
    return [(m.name or m.role, m.content or "") for m in transcript if m.role in ("user", "assistant")]


async def test_three_turns_each_update_returns_its_reply(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(echo)):
        handle = await start(client, task_queue, team)
        replies = [await send_turn(client, handle.id, f"turn {n}", sender="ana") for n in (1, 2, 3)]
        transcript = await handle.query(TeamWorkflow.transcript)
        await handle.signal(TeamWorkflow.close)
        result = await handle.result()
    assert [(r.turn, r.agent, r.text) for r in replies] == [
        (n, "echo", f"echo heard: turn {n}") for n in (1, 2, 3)]
    assert [(m.role, m.content) for m in transcript] == [
        (role, text) for n in (1, 2, 3)
        for role, text in (("user", f"turn {n}"), ("assistant", f"echo heard: turn {n}"))]
    assert transcript[0].name == "ana"
    assert (result.turns, result.answer) == (3, "echo heard: turn 3")


async def test_turns_sent_at_once_are_answered_one_by_one_in_order(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(echo)):
        handle = await start(client, task_queue, team)
        texts = [f"message {i}" for i in range(6)]
        replies = await asyncio.gather(*(send_turn(client, handle.id, t) for t in texts))
        transcript = await handle.query(TeamWorkflow.transcript)
    for text, reply in zip(texts, replies, strict=True):
        assert reply.text == f"echo heard: {text}"  # each caller gets the reply to its own turn
    assert sorted(r.turn for r in replies) == list(range(1, 7))
    pairs = [(transcript[i], transcript[i + 1]) for i in range(0, len(transcript), 2)]
    assert len(pairs) == 6
    for user, answer in pairs:  # never interleaved: each turn's reply right after it
        assert user.role == "user" and answer.content == f"echo heard: {user.content}"
    by_turn = sorted(replies, key=lambda r: r.turn)
    assert [r.text for r in by_turn] == [a.content for _, a in pairs]


async def test_signalled_turns_queue_in_order_with_updates(client: Client, task_queue: str) -> None:
    """`post_message` is the fire-and-forget form: no reply to the sender, same queue, same
    order; an empty message is dropped with a warning rather than failing the conversation."""
    team = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(echo)):
        handle = await start(client, task_queue, team)
        await handle.signal(TeamWorkflow.post_message, UserTurn(text="first"))
        await handle.signal(TeamWorkflow.post_message, UserTurn(text="   "))
        await handle.signal(TeamWorkflow.post_message, UserTurn(text="second"))
        third = await send_turn(client, handle.id, "third")
        transcript = await handle.query(TeamWorkflow.transcript)
    assert third.turn == 3 and third.text == "echo heard: third"
    assert [m.content for m in transcript if m.role == "user"] == ["first", "second", "third"]


def whoami(context_variables: dict[str, Any]) -> Result:
    """Greet the customer by name and count their visits."""
    visits = int(context_variables.get("visits", 0)) + 1
    return Result(value=f"{context_variables['customer']}, visit {visits}",
                  context_variables={"visits": visits})


def routing_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if req.agent == "triage":
        if last["role"] == "user" and "buy" in last["content"]:
            return call("transfer_to_sales_agent")
        return say("triage here")
    if last["role"] == "tool" and "visit" in last["content"]:
        return say(f"sales: {last['content']}")
    return call("whoami")


async def test_threads_keep_their_own_active_agent_and_context(client: Client, task_queue: str) -> None:
    sales = Agent("sales", "Sell.", tools=[whoami])
    triage = Agent("triage", "Route.", handoffs=[handoff(sales, "transfer_to_sales_agent")])
    team = Swarm([triage, sales], name="routing").compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(routing_script)):
        alice = await start(client, task_queue, team, context={"customer": "alice"})
        bob = await start(client, task_queue, team, context={"customer": "bob"})
        a1 = await send_turn(client, alice.id, "I want to buy a trap")
        b1 = await send_turn(client, bob.id, "hello")
        a2 = await send_turn(client, alice.id, "how much?")
        b2 = await send_turn(client, bob.id, "I want to buy too")
        a_status = await alice.query(TeamWorkflow.status)
        b_status = await bob.query(TeamWorkflow.status)
    assert (a1.agent, a1.text) == ("sales", "sales: alice, visit 1")
    assert (b1.agent, b1.text) == ("triage", "triage here")
    # Alice's second turn goes straight to sales, who remembers her visit count; Bob's first
    # sales visit starts from his own context.
    assert (a2.agent, a2.text) == ("sales", "sales: alice, visit 2")
    assert (b2.agent, b2.text) == ("sales", "sales: bob, visit 1")
    assert a_status.active_agent == "sales" and b_status.active_agent == "sales"


@pytest.mark.slow  # over a second: out of the quick loop
async def test_swarm_seed_conversation(client: Client, task_queue: str) -> None:
    """Triage hands to sales; the next turn goes straight to sales; sales hands back to triage,
    triage to issues-and-repairs, which looks up the item and executes the (approved) refund."""
    support.REFUNDS.clear()
    team = acme.build().compile()
    model = ScriptedModel(acme.SCRIPT)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        first = await send_turn(client, handle.id, "I keep failing to catch a roadrunner. Want to buy something.")
        second = await send_turn(client, handle.id, "How much is it?")
        calls_before_third = len(model.requests)
        third = asyncio.ensure_future(send_turn(client, handle.id, "Never mind. My boots fell apart, refund them."))
        question = await pending_question(handle)
        assert (question.kind, question.tool, question.agent) == ("approval", "execute_refund", "repairs")
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, approved=True))
        third_reply = await third
        full = await handle.query(TeamWorkflow.transcript, True)
    assert (first.agent, first.text) == ("sales", acme.SCRIPT["sales"][0].content)
    assert (second.agent, second.text) == ("sales", acme.SCRIPT["sales"][1].content)
    assert [r[0].agent for r in model.requests[:calls_before_third]] == ["triage", "sales", "sales"]
    assert [r[0].agent for r in model.requests[calls_before_third:]] == [
        "sales", "triage", "repairs", "repairs", "repairs"]
    assert (third_reply.agent, third_reply.text) == ("repairs", "Done: your boots are refunded.")
    assert support.REFUNDS == [("item_132612938", "fell apart after a week")]
    tool_calls = [c.name for m in full for c in m.tool_calls]
    assert tool_calls == ["transfer_to_sales_agent", "transfer_back_to_triage",
                          "transfer_to_issues_and_repairs", "look_up_item", "execute_refund"]
    offered = {t["function"]["name"] for t in model.requests[-1][2]}
    assert offered == {"execute_refund", "look_up_item", "transfer_back_to_triage"}



async def test_at_mention_goes_straight_to_the_agent(client: Client, task_queue: str) -> None:
    team = faang.build().compile()
    model = ScriptedModel({"math_expert": [call("add", a=2, b=3), say("2 + 3 = 5")]})
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        reply = await send_turn(client, handle.id, "@math_expert what is 2 + 3?")
        unknown = await send_turn(client, handle.id, "@poet write me a sonnet")
        transcript = await handle.query(TeamWorkflow.transcript)
    assert (reply.agent, reply.text) == ("math_expert", "2 + 3 = 5")
    assert [r[0].agent for r in model.requests] == ["math_expert", "math_expert"]  # no supervisor call
    seen_by_math = model.requests[0][1]
    assert seen_by_math[-1] == {"role": "user", "content": "what is 2 + 3?"}
    assert unknown.text == ("There is no agent named 'poet' in this team. "
                            "Agents: @research_expert, @math_expert.")
    assert len(model.requests) == 2  # the unknown name cost no model call
    assert shared(transcript)[-2:] == [("user", "@poet write me a sonnet"), ("supervisor", unknown.text)]


async def test_request_help_escalates_to_the_supervisor_with_the_preamble(client: Client, task_queue: str) -> None:
    sup = faang.build()
    sup.worker_preamble = True
    team = sup.compile()
    model = ScriptedModel({
        "supervisor": [call("transfer_to_math_expert"), say("I will ask research instead.")],
        "math_expert": [call("request_help", reason="this needs a web search, not math")],
    })
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        reply = await send_turn(client, handle.id, "who won the 2024 election?")
        full = await handle.query(TeamWorkflow.transcript, True)
    math_request = model.requests[1]
    assert math_request[0].agent == "math_expert"
    assert math_request[1][0]["content"].startswith(
        "You are a specialized agent working under supervisor.")
    assert "request_help" in {t["function"]["name"] for t in math_request[2]}
    escalation = next(m for m in full if m.role == "tool" and m.name == "request_help")
    assert escalation.content == "Escalated to supervisor: this needs a web search, not math"
    # The supervisor's next call sees the escalation and answers.
    assert any("this needs a web search" in (m.get("content") or "") for m in model.requests[2][1])
    assert (reply.agent, reply.text) == ("supervisor", "I will ask research instead.")


@tool(return_direct=True)
def order_status(order_id: str) -> str:
    """The shipping status of an order, returned to the user as is."""
    return f"Order {order_id}: shipped"


async def test_templates_return_direct_and_current_datetime(client: Client, task_queue: str) -> None:
    clerk = Agent("clerk", "Today is {date}. You serve {context[customer]}.",
                  tools=[order_status, "current_datetime"])
    team = Swarm([clerk]).compile()
    model = ScriptedModel({"clerk": [
        call("current_datetime", timezone="Asia/Tokyo"),
        call("current_datetime", timezone="Mars/Olympus"),
        call("order_status", order_id="A-17"),
    ]})
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team, context={"customer": "Ana"})
        reply = await send_turn(client, handle.id, "where is my order?")
        full = await handle.query(TeamWorkflow.transcript, True)
        history = await handle.fetch_history()
    started = history.events[0].event_time.ToDatetime()
    instructions = model.requests[0][0].instructions
    assert instructions == f"Today is {started.date().isoformat()}. You serve Ana."
    tool_text = {m.tool_call_id: m.content or "" for m in full if m.role == "tool"}
    tokyo, mars, status = tool_text.values()
    assert "+09:00" in tokyo and "Asia/Tokyo" in tokyo
    assert mars == "Error: unknown timezone 'Mars/Olympus'. Use an IANA name such as Europe/Paris."
    assert status == "Order A-17: shipped"
    assert (reply.agent, reply.text) == ("clerk", "Order A-17: shipped")
    assert len(model.requests) == 3  # no model call after the return_direct tool
    assert json.loads(model.requests[0][0].model_dump_json())["transcript_length"] == 1
