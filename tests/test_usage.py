"""Token usage: summed per conversation, turn, agent and model (nested teams included), shown
by the status query, the result, follow events and the CLI; token budgets end a turn."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_teams.cli.console import format_event
from durable_teams.cli.costs import load_prices, usage_lines
from durable_teams.client.events import events_of
from durable_teams.client.send import send_turn
from durable_teams.examples import faang, faang_teams
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows import usage
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import (
    Budgets,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)
from durable_teams.workflows.state import ConversationInput, ConversationResult
from durable_teams.workflows.usage import ModelPrice, Tally, UsageLedger

from .conftest import running_worker
from .teams import TOKENS, MeteredModel

pytestmark = pytest.mark.workflow


def tally(calls: int, agent: str) -> Tally:
    prompt, completion = TOKENS[agent]
    return Tally(input_tokens=calls * prompt, output_tokens=calls * completion, model_calls=calls)


# ---- pure ------------------------------------------------------------------------------------

def test_ledger_sums_turns_agents_models_and_children_and_prices_them():
    ledger = UsageLedger()
    usage.record(ledger, 1, "a", "m1", Usage(prompt_tokens=1000, completion_tokens=100))
    usage.record(ledger, 2, "a", "m1", Usage(prompt_tokens=10, completion_tokens=1))
    child = UsageLedger()
    usage.record(child, 1, "b", "m2", Usage(prompt_tokens=500, completion_tokens=50))
    usage.add_child(ledger, 2, child)
    assert ledger.total == Tally(input_tokens=1510, output_tokens=151, model_calls=3)
    assert (ledger.turn_number, ledger.turn) == (2, Tally(input_tokens=510, output_tokens=51, model_calls=2))
    assert ledger.by_agent == {"a": Tally(input_tokens=1010, output_tokens=101, model_calls=2),
                               "b": Tally(input_tokens=500, output_tokens=50, model_calls=1)}
    prices = {"m1": ModelPrice(input_per_million=2.0, output_per_million=10.0),
              "m2": ModelPrice(input_per_million=1.0, output_per_million=4.0)}
    assert ledger.cost(prices) == pytest.approx((1010 * 2 + 101 * 10 + 500 * 1 + 50 * 4) / 1e6)
    assert ledger.cost({"m1": prices["m1"]}) is None  # m2 has no price: no made-up cost
    assert usage_lines(ledger, prices) == [
        "usage: 1,510 in / 151 out tokens, 3 model calls, cost 0.0037",
        "  turn 2: 510 in / 51 out tokens, 2 model calls",
        "  a: 1,010 in / 101 out tokens, 2 model calls",
        "  b: 500 in / 50 out tokens, 1 model calls",
    ]
    assert usage_lines(ledger, {"m1": prices["m1"]})[0].endswith("(cost unknown: no price for m2)")


def test_token_budgets_per_turn_and_per_conversation():
    ledger = UsageLedger()
    usage.record(ledger, 1, "a", "m", Usage(prompt_tokens=80, completion_tokens=20))
    budgets = Budgets(max_tokens_per_turn=100, max_tokens_per_conversation=150)
    assert usage.over_budget(ledger, 1, budgets) == (
        "Stopped: this turn used 100 tokens, its budget is 100 tokens, before an agent gave a "
        "final answer.")
    assert usage.over_budget(ledger, 2, budgets) is None  # a new turn starts afresh
    usage.record(ledger, 2, "a", "m", Usage(prompt_tokens=40, completion_tokens=10))
    assert usage.over_budget(ledger, 3, budgets) == (
        "Stopped: this conversation used 150 tokens, its budget is 150 tokens.")
    assert usage.over_budget(ledger, 3, Budgets()) is None


def test_a_nested_team_gets_what_is_left_of_its_parent_s_token_budgets():
    ledger = UsageLedger()
    usage.record(ledger, 1, "a", "m", Usage(prompt_tokens=900, completion_tokens=100))  # an earlier turn
    usage.record(ledger, 2, "a", "m", Usage(prompt_tokens=1400, completion_tokens=100))
    parent = Budgets(max_tokens_per_turn=6000, max_tokens_per_conversation=10_000)
    own = Budgets(max_model_calls=7)
    assert usage.child_budgets(own, ledger, 2, parent) == Budgets(
        max_model_calls=7, max_tokens_per_turn=4500, max_tokens_per_conversation=7500)
    # two children started at once split it; a nested team's own tighter limit stays
    assert usage.child_budgets(Budgets(max_tokens_per_conversation=3000), ledger, 2, parent, share=2) == Budgets(
        max_tokens_per_turn=2250, max_tokens_per_conversation=3000)
    assert usage.child_budgets(own, ledger, 2, Budgets()) == own  # no token budgets: none given


def test_a_stopped_turn_quotes_the_latest_answer_given_in_it():
    log = [Message(role="assistant", content="an earlier turn's answer", name="a"),
           Message(role="user", content="q"),
           Message(role="assistant", content="first", name="a"),
           Message(role="assistant", content="", name="sup", tool_calls=[ToolCall(id="1", name="t")]),
           Message(role="assistant", content="Transferring back to sup", name="a", kind="handoff_back"),
           Message(role="assistant", content="Stopped: ...", name="b", kind="error")]
    assert usage.last_answer(log, 1) == log[2]
    assert usage.last_answer(log, 3) is None
    assert usage.stopped_text("Stopped: why.", log[2]) == "Stopped: why.\n\nBefore the stop, a answered:\nfirst"
    assert usage.stopped_text("Stopped: why.", None) == "Stopped: why."
    assert usage.request_index(log, True) == 1 and usage.request_index(log, False) == len(log)


def test_price_table_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    good = tmp_path / "prices.json"
    good.write_text('{"gpt-4o": {"input_per_million": 2.5, "output_per_million": 10}}')
    monkeypatch.setenv("DURABLE_TEAMS_PRICES", str(good))
    assert load_prices() == {"gpt-4o": ModelPrice(input_per_million=2.5, output_per_million=10)}
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpt-4o": {"input": 1}}')
    with pytest.raises(ValueError, match="price table .*bad.json"):
        load_prices(str(bad))
    monkeypatch.setenv("DURABLE_TEAMS_PRICES", str(bad))
    ledger = UsageLedger()
    usage.record(ledger, 1, "a", "gpt-4o", Usage(prompt_tokens=1, completion_tokens=1))
    assert "(cost unknown: price table" in usage_lines(ledger)[0]  # said, not a traceback


# ---- in a conversation -----------------------------------------------------------------------

async def test_usage_per_agent_turn_and_conversation_in_result_status_and_events(
        client: Client, task_queue: str) -> None:
    team = faang.build(model="m").compile()
    async with running_worker(client, task_queue, [team], MeteredModel(faang.SCRIPT)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang.QUESTION),
            id=f"usage-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        result = await handle.result()
        status = await handle.query(TeamWorkflow.status)
        log = await handle.query(TeamWorkflow.transcript, True)
    expected = {"supervisor": tally(3, "supervisor"), "research_expert": tally(2, "research_expert"),
                "math_expert": tally(5, "math_expert")}
    total = Tally(input_tokens=2200, output_tokens=220, model_calls=10)
    assert result.usage is not None
    assert (result.usage.total, result.usage.by_agent, result.usage.by_model) == (total, expected, {"m": total})
    assert (result.usage.turn_number, result.usage.turn) == (1, total)
    assert status.usage == result.usage
    assert status.last_reply is not None and status.last_reply.usage == total
    replies = [m for m in log if m.role == "assistant" and m.usage is not None]
    assert len(replies) == 10
    events = [e for i, m in enumerate(log) for e in events_of(i, m) if e.usage is not None]
    assert len(events) == 10
    assert format_event(events[0]) == (
        "tool_usage    [supervisor] transfer_to_research_expert()  (100 in / 10 out tokens)")


@pytest.mark.slow  # over a second: out of the quick loop
async def test_nested_teams_return_their_usage_to_the_parent(client: Client, task_queue: str) -> None:
    team = faang_teams.build(model="m").compile()
    async with running_worker(client, task_queue, [team], MeteredModel(faang_teams.SCRIPT)):
        result = await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang_teams.QUESTION),
            id=f"usage-nested-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    assert result.usage is not None
    assert result.usage.by_agent == {
        "top_supervisor": tally(3, "top_supervisor"), "research_team": tally(2, "research_team"),
        "research_expert": tally(2, "research_expert"), "math_team": tally(2, "math_team"),
        "math_expert": tally(5, "math_expert")}
    assert result.usage.total == Tally(input_tokens=30 + 40 + 400 + 60 + 1500,
                                       output_tokens=3 + 4 + 40 + 6 + 150, model_calls=14)
    assert result.usage.turn == result.usage.total
    assert result.model_calls == 14


async def test_a_turn_token_budget_ends_the_turn_with_a_clear_message(
        client: Client, task_queue: str) -> None:
    builder = faang.build(model="m")
    builder.budgets = Budgets(max_tokens_per_turn=500)
    team = builder.compile()
    async with running_worker(client, task_queue, [team], MeteredModel(faang.SCRIPT)):
        result = await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang.QUESTION),
            id=f"usage-budget-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    # supervisor (110) + research twice (440) = 550 >= 500: the supervisor is not called again
    assert (result.status, result.agent) == ("budget_exceeded", "supervisor")
    assert result.answer == ("Stopped: this turn used 550 tokens, its budget is 500 tokens, "
                             "before an agent gave a final answer.\n\nBefore the stop, "
                             f"research_expert answered:\n{faang_teams.RESEARCH_SUMMARY}")
    assert result.usage is not None and result.usage.total.model_calls == 3


async def test_a_conversation_token_budget_carries_across_turns_and_continue_as_new(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("solo", model="m")], name="solo",
                 budgets=Budgets(max_tokens_per_turn=100, max_tokens_per_conversation=250)).compile()
    team.spec.continue_as_new_after_events = 12  # continues as new between turns
    model = MeteredModel({"solo": [say("one"), say("two"), say("three")]})
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"usage-conv-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        replies = [await send_turn(client, handle.id, f"turn {n}") for n in range(1, 5)]
        status = await handle.query(TeamWorkflow.status)
        await handle.signal(TeamWorkflow.close)
        result = await handle.result()
    assert [(r.text, r.status) for r in replies] == [
        ("one", "completed"), ("two", "completed"), ("three", "completed"),
        ("Stopped: this conversation used 300 tokens, its budget is 250 tokens.", "budget_exceeded")]
    assert [r.usage for r in replies] == [tally(1, "solo")] * 3 + [Tally()]
    assert status.usage is not None and status.usage.total == tally(3, "solo")
    assert result.runs > 1 and result.usage == status.usage


@pytest.mark.slow  # starts a process
async def test_the_cli_prints_usage_and_cost_in_status_and_tokens_in_follow(
        client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .cli_process import cli

    prices = tmp_path / "prices.json"
    prices.write_text('{"m": {"input_per_million": 1000, "output_per_million": 2000}}')
    monkeypatch.setenv("DURABLE_TEAMS_PRICES", str(prices))
    team = faang.build(model="m").compile()
    workflow_id = f"usage-cli-{uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], MeteredModel(faang.SCRIPT)):
        await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang.QUESTION),
            id=workflow_id, task_queue=task_queue)
        status = await cli(client, "status", workflow_id)  # a query needs a worker
        followed = await cli(client, "follow", workflow_id)
    assert ("usage: 2,200 in / 220 out tokens, 10 model calls, cost 2.6400\n"
            "  turn 1: 2,200 in / 220 out tokens, 10 model calls\n"
            "  math_expert: 1,500 in / 150 out tokens, 5 model calls\n"
            "  research_expert: 400 in / 40 out tokens, 2 model calls\n"
            "  supervisor: 300 in / 30 out tokens, 3 model calls\n") in status
    assert "ai_message    [supervisor] " + faang.ANSWER + "  (100 in / 10 out tokens)" in followed


# ---- teams of teams: a child spends what is left of its parent's budgets ------------------------

CALL = Usage(prompt_tokens=1400, completion_tokens=100)
"""What every model call reports in the tests below: 1,500 tokens."""


class FlatModel(ScriptedModel):
    """The scripted model, every call reporting `CALL`."""

    async def complete(self, req: ModelRequest, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]]) -> ModelResponse:
        response = await super().complete(req, messages, tools)
        return response.model_copy(update={"usage": CALL})


def teams_with(budgets: Budgets):  # noqa: ANN201
    builder = faang_teams.build(model="m")
    builder.budgets = budgets
    return builder.compile()


async def child_runs(client: Client, workflow_id: str) -> list[str]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return [e.start_child_workflow_execution_initiated_event_attributes.workflow_id
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]


SUMMARY = faang_teams.RESEARCH_SUMMARY


@pytest.mark.parametrize(("limit", "agent", "used", "answered"), [
    # the research team runs out of the 4,500 left to it, after its expert answered
    (6000, "research_team", 6000, "research_expert"),
    # the research team answers with 6,000 of the 5,500 left; the top supervisor then stops
    (7000, "top_supervisor", 7500, "research_team"),
])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_turn_budget_holds_across_a_team_of_teams_and_the_user_reads_the_nested_answer(
        client: Client, task_queue: str, limit: int, agent: str, used: int, answered: str) -> None:
    team = teams_with(Budgets(max_tokens_per_turn=limit))
    workflow_id = f"usage-teams-{uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], FlatModel(faang_teams.SCRIPT)):
        result = await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang_teams.QUESTION),
            id=workflow_id, task_queue=task_queue)
        started = await child_runs(client, workflow_id)
        child = await client.get_workflow_handle(
            started[0], result_type=ConversationResult).result()
    assert result.usage is not None and result.usage.total.total_tokens == used
    assert used <= limit + 1500  # at most one model call over
    assert (result.status, result.agent) == ("budget_exceeded", agent)
    assert result.answer == (
        f"Stopped: this turn used {used:,} tokens, its budget is {limit:,} tokens, before an agent "
        f"gave a final answer.\n\nBefore the stop, {answered} answered:\n{SUMMARY}")
    assert result.before_stop is not None and result.before_stop.content == SUMMARY
    assert started == [f"{workflow_id}/research_team-1"]  # the math team was never started
    assert child.usage is not None and child.usage.total.total_tokens == used - 1500
    if limit == 6000:  # the child stopped at what was left to it, and said what it had
        assert (child.status, child.answer) == ("budget_exceeded", (
            "Stopped: this turn used 4,500 tokens, its budget is 4,500 tokens, before an agent gave "
            f"a final answer.\n\nBefore the stop, research_expert answered:\n{SUMMARY}"))
    else:
        assert (child.status, child.answer) == ("completed", SUMMARY)


async def test_a_conversation_budget_holds_across_a_team_of_teams(client: Client, task_queue: str) -> None:
    team = teams_with(Budgets(max_tokens_per_conversation=7500))
    script = {**faang_teams.SCRIPT, "top_supervisor": [say("Hello."), *faang_teams.SCRIPT["top_supervisor"]]}
    async with running_worker(client, task_queue, [team], FlatModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"usage-teams-conv-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        replies = [await send_turn(client, handle.id, text) for text in ("hi", faang_teams.QUESTION)]
        started = await child_runs(client, handle.id)
        child = await client.get_workflow_handle(started[0], result_type=ConversationResult).result()
        await handle.signal(TeamWorkflow.close)
        result = await handle.result()
    # turn 2 had 6,000 left: 1,500 for the handoff, 4,500 for the research team
    assert [(r.text, r.status) for r in replies] == [
        ("Hello.", "completed"),
        ("Stopped: this conversation used 7,500 tokens, its budget is 7,500 tokens.\n\n"
         f"Before the stop, research_expert answered:\n{SUMMARY}", "budget_exceeded")]
    assert [r.usage.total_tokens for r in replies if r.usage] == [1500, 6000]
    assert result.usage is not None and result.usage.total.total_tokens == 7500
    assert (child.status, child.answer) == ("budget_exceeded", (
        "Stopped: this conversation used 4,500 tokens, its budget is 4,500 tokens.\n\n"
        f"Before the stop, research_expert answered:\n{SUMMARY}"))
    assert started == [f"{handle.id}/research_team-1"]  # the math team was never started
