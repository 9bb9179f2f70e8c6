"""Breakpoints before an agent runs and after a step (workflows/breakpoints.py), declared on a
team, an agent or a tool, on the dev server with counting scripted models and a refund tool
that is not idempotent."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from durable_teams.client.send import send_reply, send_turn
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, calls, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .time_travel_team import REFUNDS, execute_refund, support_model
from .waiting import pending_question, until

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


@tool(interrupt_after=True)
def look_up(order: str) -> str:
    """Look an order up."""
    return f"order {order}: boots, paid"


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"bp-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    return handle


async def replays(client: Client, handle: WorkflowHandle) -> None:
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=client.data_converter)
    result = await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


def desk_model(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """A supervisor that hands every request to billing and then reports what came back;
    billing pays."""
    if req.agent == "billing":
        return say("billing paid")
    if messages[-1]["role"] == "user":
        return call("transfer_to_billing")
    since = [m.get("content") or "" for m in messages if m["role"] in ("assistant", "tool")]
    return say("desk: " + " | ".join(since))


def desk_team(**breakpoints: list[str]) -> CompiledTeam:
    return Supervisor([Agent("billing", "Pays.")], name="desk", **breakpoints).compile()


@pytest.mark.slow  # about 2 s: two turns through a supervisor
async def test_a_breakpoint_before_a_worker_shows_it_and_resumes_or_stops_it(client: Client, task_queue: str) -> None:
    model = ScriptedModel(desk_model)
    async with running_worker(client, task_queue, [desk_team(interrupt_before=["billing"])], model):
        handle = await start(client, task_queue, desk_team(interrupt_before=["billing"]))
        turn = asyncio.ensure_future(send_turn(client, handle.id, "pay me"))
        asked = await pending_question(handle)
        billing_before = sum(r.agent == "billing" for r, _, _ in model.requests)
        await send_reply(client, handle.id, asked.question_id, approved=True)
        resumed = await turn
        turn = asyncio.ensure_future(send_turn(client, handle.id, "pay me again"))
        stopped_q = await pending_question(handle)
        await send_reply(client, handle.id, stopped_q.question_id, approved=False, text="not now")
        stopped = await turn
        await replays(client, handle)
    assert (asked.kind, asked.breakpoint, asked.after, asked.agent, asked.tool) == (
        "approval", True, False, "billing", None)
    assert asked.text == "Breakpoint before billing runs: resume (approve) or stop (deny)?"
    assert billing_before == 0  # paused before its model call
    assert "billing paid" in resumed.text and resumed.status == "completed"
    # stopped: billing never ran, and the supervisor's model was told why
    assert sum(r.agent == "billing" for r, _, _ in model.requests) == 1
    assert "The user stopped billing at a breakpoint before it ran: not now." in stopped.text
    assert stopped.text.startswith("desk: ") and stopped.status == "completed"


async def test_a_breakpoint_after_a_tool_resumes_with_an_edited_result_or_stops_the_run(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_after=["execute_refund"]).compile()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        shown = await pending_question(handle)
        calls_while_paused = len(model.requests)
        with pytest.raises(Exception, match="only a breakpoint before a tool call takes edited arguments"):
            await send_reply(client, handle.id, shown.question_id, approved=True, arguments='{"order": "X"}')
        await send_reply(client, handle.id, shown.question_id, approved=True, result="refund queued for A1")
        edited = await turn
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund B1"))
        second = await pending_question(handle)
        await send_reply(client, handle.id, second.question_id, approved=False, text="check first")
        stopped = await turn
        transcript = await handle.query(TeamWorkflow.transcript)
        await replays(client, handle)
    assert (shown.breakpoint, shown.after, shown.tool, shown.arguments, shown.result) == (
        True, True, "execute_refund", '{"order": "A1"}', "refunded A1")
    assert calls_while_paused == 1  # the model has not seen the result yet
    assert edited.text == "done: refund queued for A1"  # the model saw the edited result
    assert REFUNDS == {"A1": 1, "B1": 1}  # each ran once; a stop after it undoes nothing
    note = "The user stopped support at a breakpoint after execute_refund ran: check first."
    assert (stopped.text, stopped.status) == (note, "cancelled")
    assert len(model.requests) == 3  # no model call after the stopped result
    tool_message = [m for m in transcript if m.role == "tool"][-1]
    assert tool_message.content == f"refunded B1\n\n({note})"  # the next turn's model sees it


async def test_a_breakpoint_after_an_agent_shows_its_handoff_and_a_stop_ends_the_turn(
        client: Client, task_queue: str) -> None:
    def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
        return call("transfer_to_support") if req.agent == "triage" else say("support here")

    team = Swarm([Agent("triage", "Route.", handoffs=["support"]), Agent("support", "Help.")],
                 interrupt_after=["triage"]).compile()
    model = ScriptedModel(script)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "help"))
        asked = await pending_question(handle)
        await send_reply(client, handle.id, asked.question_id, approved=False)
        stopped = await turn
        status = await handle.query(TeamWorkflow.status)
        await replays(client, handle)
    assert (asked.agent, asked.tool, asked.after, asked.result) == ("triage", None, True, "hands off to support")
    assert (stopped.text, stopped.status) == ("The user stopped the turn at a breakpoint after triage.", "cancelled")
    assert [r.agent for r, _, _ in model.requests] == ["triage"]  # support never ran
    assert status.active_agent == "triage"


async def test_breakpoints_declared_on_an_agent_and_on_a_tool(client: Client, task_queue: str) -> None:
    def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
        last = messages[-1]
        if last["role"] == "tool":
            return say(f"saw: {last['content']}")
        return call("look_up", order="A1")

    team = Swarm([Agent("support", "Help.", tools=[look_up], interrupt_before=["agent"])]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "where is A1"))
        before = await pending_question(handle)
        await send_reply(client, handle.id, before.question_id, approved=True)
        after = await until_question(handle, before.question_id)
        await send_reply(client, handle.id, after.question_id, approved=True)
        reply = await turn
    assert (before.agent, before.tool, before.after) == ("support", None, False)
    assert (after.tool, after.after, after.result) == ("look_up", True, "order A1: boots, paid")
    assert reply.text == "saw: order A1: boots, paid"


async def until_question(handle: WorkflowHandle, answered: str) -> Any:
    """The next question after `answered`."""
    async def fresh() -> list[Any]:
        pending = await handle.query(TeamWorkflow.pending_questions)
        return [q for q in pending if q.question_id != answered]

    return (await until(fresh, f"a question after {answered} on {handle.id}"))[0]


@pytest.mark.slow  # two turns in a conversation that continues as new after each step
async def test_breakpoints_in_a_conversation_that_continues_as_new_run_each_step_once(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund], interrupt_before=["agent"])],
                 interrupt_after=["execute_refund"]).compile()
    team.spec.continue_as_new_after_events = 5  # passed at every wait
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        replies = []
        for order in ("A1", "B1"):
            turn = asyncio.ensure_future(send_turn(client, handle.id, f"refund {order}"))
            for _ in range(2):  # before the agent, after the refund
                asked = await pending_question(handle)
                await send_reply(client, handle.id, asked.question_id, approved=True)
                await until(lambda q=asked: gone(handle, q.question_id), f"{asked.question_id} answered")
            replies.append(await turn)
        latest = (await handle.describe()).run_id
    assert [r.text for r in replies] == ["done: refunded A1", "done: refunded B1"]
    assert REFUNDS == {"A1": 1, "B1": 1} and len(model.requests) == 4
    assert latest != handle.first_execution_run_id  # it continued as new; no step ran twice


async def gone(handle: WorkflowHandle, question_id: str) -> bool:
    return all(q.question_id != question_id for q in await handle.query(TeamWorkflow.pending_questions))


@pytest.mark.slow  # two workers at once
async def test_breakpoints_before_workers_engaged_at_once_are_answered_each_on_its_own(
        client: Client, task_queue: str) -> None:
    def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
        if req.agent != "desk":
            return say(f"{req.agent} done")
        if messages[-1]["role"] == "user":
            return calls(("transfer_to_a", {}), ("transfer_to_b", {}))
        return say("desk: " + " | ".join(m.get("content") or "" for m in messages if m["role"] == "assistant"))

    team = Supervisor([Agent("a", "A."), Agent("b", "B.")], name="desk", supervisor_name="desk",
                      parallel_tool_calls=True, interrupt_before=["a", "b"]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "both"))
        both = await until(lambda: two_pending(handle), "two breakpoints pending")
        by_agent = {q.agent: q.question_id for q in both}
        await send_reply(client, handle.id, by_agent["b"], approved=False, text="skip b")
        await send_reply(client, handle.id, by_agent["a"], approved=True)
        reply = await turn
    assert "a done" in reply.text and "b done" not in reply.text
    assert "The user stopped b at a breakpoint before it ran: skip b." in reply.text


async def two_pending(handle: WorkflowHandle) -> list[Any]:
    pending = await handle.query(TeamWorkflow.pending_questions)
    return pending if len(pending) == 2 else []


@pytest.mark.slow  # a child workflow
async def test_an_agent_run_as_a_child_takes_its_breakpoint_into_the_child(client: Client, task_queue: str) -> None:
    team = Supervisor([Agent("billing", "Pays.", run_as_child=True, interrupt_before=["agent"])],
                      name="desk").compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(desk_model)):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "pay me"))
        child = client.get_workflow_handle(f"{handle.id}/billing-1")
        asked = await pending_question(child)
        await send_reply(client, child.id, asked.question_id, approved=True)
        reply = await turn
    assert (asked.agent, asked.breakpoint, asked.tool) == ("billing", True, None)
    assert "billing paid" in reply.text
