"""A model call takes the view its workflow built when both run in one process; that view is
exactly what the query returns, and a call the workflow offers nothing for reads by query.

The equivalence is checked on every view read of real conversations: both handoff views and
hidden handoff messages, both output modes, parallel nested teams, an llm-decision supervisor
that asks a person and is corrected, and a swarm whose refund waits for a person's approval."""

from __future__ import annotations

import asyncio
import gc
import uuid
from dataclasses import dataclass, field

import pytest
from temporalio.client import Client

from durable_teams.activities.view_cache import ViewCache
from durable_teams.client.send import send_turn
from durable_teams.examples import acme, faang, faang_teams, support
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows import offered_views
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import (
    Message,
    ModelCalls,
    ModelRequest,
    ModelView,
    TeamSpec,
    ToolSpec,
)
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import running_worker
from .waiting import pending_question

pytestmark = pytest.mark.workflow


def request(wid: str, agent_run: int, length: int, agent: str = "supervisor") -> ModelRequest:
    return ModelRequest(workflow_id=wid, run_id="r1", agent=agent, model="m", agent_run=agent_run,
                        transcript_length=length)


def test_a_call_reads_the_view_its_workflow_offers_while_it_is_in_flight() -> None:
    wid = f"fake-{uuid.uuid4().hex[:6]}"
    offered = offered_views.register(wid, "r1")
    view, tools = [Message(role="user", content="q")], [ToolSpec(name="add")]
    offered.offer(0, 1, view, tools)
    read = offered_views.read(request(wid, 0, 1))
    assert read is not None and read.messages is view and read.tools == tools and read.in_process
    assert offered_views.read(request(wid, 0, 2)) is None  # another call (scheduled later)
    assert offered_views.read(request(wid, 3, 1)) is None  # another agent run's
    assert offered_views.read(request("elsewhere", 0, 1)) is None  # not in this process
    offered.withdraw(0, 1)
    assert offered_views.read(request(wid, 0, 1)) is None and len(offered) == 0  # the call returned
    offered.offer(0, 1, view, tools)
    del offered
    gc.collect()
    assert offered_views.read(request(wid, 0, 1)) is None  # registered weakly: gone with the instance


def faang_with(**options: object) -> CompiledTeam:
    team = faang.build()
    for key, value in options.items():
        setattr(team, key, value)
    return team.compile()


def regular(spec: TeamSpec) -> TeamSpec:
    """`spec` with model calls as regular activities: a view read by query is theirs (a local
    activity's workflow task is open while it runs, so a query of its own workflow would wait
    for the task's heartbeat)."""
    spec.model_calls = ModelCalls(local=False)
    return spec


@dataclass
class Comparing:
    """A view reader that reads both ways and keeps what differs."""

    compared: int = 0
    differences: list[tuple[ModelRequest, ModelView | None, ModelView]] = field(default_factory=list)
    queries: ViewCache = field(default_factory=lambda: ViewCache(live=False))

    async def read(self, req: ModelRequest) -> ModelView:
        live = offered_views.read(req)
        queried = await self.queries.read(req)
        self.compared += 1
        if live is None or live.model_copy(update={"in_process": False}) != queried:
            self.differences.append((req, live, queried))
        return queried


DECISION = '{"target": "orders", "reasoning": "an order question", "confidence": 0.9}'


async def decide_with_a_person(client: Client, task_queue: str, reader: Comparing) -> None:
    """llm-decision: the supervisor asks for the order number, gives an unusable decision, is
    corrected, routes; its private scope and the fold into the shared conversation are read."""
    orders = Agent("orders", "Order questions.", description="order status")
    maths = Agent("maths", "Arithmetic.", description="sums")
    compiled = Supervisor([orders, maths], strategy="llm-decision", tools=["ask_human"],
                          name="live-decision").compile()
    model = ScriptedModel({
        "supervisor": [call("ask_human", question="What is your order number?"),
                       say('{"target": "billing"}'), say(DECISION)],
        "orders": [say("Order A-123 ships tomorrow.")],
    })
    async with running_worker(client, task_queue, [compiled], model, view_reader=reader.read):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=regular(compiled.spec), single_turn=False),
            id=f"live-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "my order has not arrived"))
        question = await pending_question(handle)
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="A-123"))
        reply = await turn
    assert (reply.agent, reply.text) == ("orders", "Order A-123 ships tomorrow.")
    assert [r.agent for r, _, _ in model.requests] == ["supervisor"] * 3 + ["orders"]


async def swarm_with_an_approval(client: Client, task_queue: str, reader: Comparing) -> None:
    """The ACME swarm over three turns; the refund waits for a person's approval."""
    compiled = acme.build().compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(acme.SCRIPT), view_reader=reader.read):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=regular(compiled.spec), single_turn=False),
            id=f"live-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await send_turn(client, handle.id, "I keep failing to catch a roadrunner. Want to buy something.")
        await send_turn(client, handle.id, "How much is it?")
        third = asyncio.ensure_future(send_turn(client, handle.id, "Never mind. My boots fell apart, refund them."))
        question = await pending_question(handle)
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, approved=True))
        reply = await third
    assert (reply.agent, reply.text) == ("repairs", "Done: your boots are refunded.")


@pytest.mark.slow  # over a second: out of the quick loop
async def test_every_view_read_live_equals_the_query(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    cases: list[tuple[CompiledTeam, dict, str]] = [
        (faang.build().compile(), faang.SCRIPT, faang.QUESTION),  # workers see every handoff
        (faang_with(workers_see_handoffs="own"), faang.SCRIPT, faang.QUESTION),
        (faang_with(output_mode="full_history"), faang.SCRIPT, faang.QUESTION),
        (faang_with(add_handoff_messages=False), faang.SCRIPT, faang.QUESTION),
        (faang_teams.build().compile(), faang_teams.SCRIPT, faang_teams.QUESTION),
    ]
    reader = Comparing()
    for compiled, script, question in cases:
        async with running_worker(client, task_queue, [compiled], ScriptedModel(script), view_reader=reader.read):
            result = await client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=regular(compiled.spec), task=question),
                id=f"live-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            assert result.status == "completed"
    one_shot = reader.compared
    await decide_with_a_person(client, task_queue, reader)
    await swarm_with_an_approval(client, task_queue, reader)
    assert one_shot >= 4 * 10 and reader.compared >= one_shot + 4 + 7
    assert reader.differences == []


@pytest.mark.parametrize("live", [True, False])
async def test_a_conversation_in_this_process_makes_no_view_query(
    client: Client, task_queue: str, live: bool
) -> None:
    compiled = acme.build().compile()
    cache = ViewCache(live=live)
    async with running_worker(client, task_queue, [compiled], ScriptedModel(acme.SCRIPT), view_reader=cache.read):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec if live else regular(compiled.spec), single_turn=False),
            id=f"live-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first = await send_turn(client, handle.id, "I keep failing to catch a roadrunner. Want to buy something.")
        second = await send_turn(client, handle.id, "How much is it?")
    assert (first.agent, second.agent) == ("sales", "sales")
    if live:  # triage, sales, sales: all read in process
        assert (cache.live, cache.hits, cache.misses) == (3, 0, 0)
    else:  # the query path, with its own per-worker cache of the log
        assert (cache.live, cache.hits, cache.misses) == (0, 2, 1)
