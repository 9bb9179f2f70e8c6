"""Where breakpoints pause (workflows/breakpoints.py `pauses`, the one place that decides), what
a definition may name, and which answers a breakpoint takes: pure, no server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_teams.teams.builders import Agent, Supervisor, Swarm
from durable_teams.teams.tools import tool
from durable_teams.workflows.breakpoints import declared, pauses
from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.human import reply_problem
from durable_teams.workflows.state import ConversationState, HumanReply, Question

from .time_travel_team import execute_refund

pytestmark = pytest.mark.pure


@tool(interrupt_before=True)
def wire_money(to: str) -> str:
    """Send money."""
    return to


@tool
def look_up(order: str) -> str:
    """Look an order up."""
    return order


def test_a_team_without_breakpoints_never_pauses() -> None:
    team = Swarm([Agent("a", "A.", tools=[look_up, execute_refund])]).compile().spec
    assert not declared(team)
    assert not any(pauses(team, when, "a", tool) for when in ("before", "after")
                   for tool in (None, "look_up", "execute_refund"))


@pytest.mark.parametrize(("team_lists", "agent_lists", "before", "after"), [
    ({"interrupt_before": ["tools"]}, {}, {"look_up", "execute_refund"}, set()),
    ({"interrupt_before": ["look_up"]}, {}, {"look_up"}, set()),
    ({"interrupt_after": ["execute_refund"]}, {}, set(), {"execute_refund"}),
    ({"interrupt_before": ["a"], "interrupt_after": ["a"]}, {}, {"a"}, {"a"}),
    ({}, {"interrupt_before": ["agent"]}, {"a"}, set()),
    ({}, {"interrupt_before": ["a"]}, {"a"}, set()),
    ({}, {"interrupt_after": ["tools"]}, set(), {"look_up", "execute_refund"}),
    ({}, {"interrupt_before": ["execute_refund"], "interrupt_after": ["agent"]}, {"execute_refund"}, {"a"}),
])
def test_what_pauses_for_each_declaration(team_lists: dict, agent_lists: dict, before: set, after: set) -> None:
    team = Swarm([Agent("a", "A.", tools=[look_up, execute_refund], **agent_lists),
                  Agent("b", "B.", tools=[look_up])], **team_lists).compile().spec
    steps = [("a", None), ("a", "look_up"), ("a", "execute_refund")]
    assert {tool or agent for agent, tool in steps if pauses(team, "before", agent, tool)} == before
    assert {tool or agent for agent, tool in steps if pauses(team, "after", agent, tool)} == after
    assert declared(team)
    # an agent's declarations are its own: its peer's calls of the same tool do not pause
    assert pauses(team, "before", "b", "look_up") == ("look_up" in team_lists.get("interrupt_before", ["-"])
                                                      or "tools" in team_lists.get("interrupt_before", []))


def test_a_tool_declared_with_a_breakpoint_pauses_in_every_team_and_agent() -> None:
    team = Swarm([Agent("a", "A.", tools=[wire_money]), Agent("b", "B.", tools=[wire_money])]).compile().spec
    assert declared(team) and team.tools["wire_money"].interrupt_before
    assert pauses(team, "before", "a", "wire_money") and pauses(team, "before", "b", "wire_money")
    assert not pauses(team, "after", "a", "wire_money")


def test_a_supervisor_and_its_workers_are_named_in_the_teams_lists() -> None:
    team = Supervisor([Agent("billing", "Pays.")], interrupt_before=["supervisor", "billing"]).compile().spec
    assert pauses(team, "before", "supervisor") and pauses(team, "before", "billing")
    assert not pauses(team, "after", "billing")


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Swarm([Agent("a", "A.", tools=[look_up])], interrupt_after=["lok_up"]),
     r"interrupt_after names no tool or agent of team 'swarm': lok_up \(its tools: look_up; its agents: a;"),
    (lambda: Swarm([Agent("a", "A.", tools=[look_up])], interrupt_before=["c"]),
     r"interrupt_before names no tool or agent of team 'swarm': c"),
    (lambda: Swarm([Agent("a", "A.", tools=[look_up], interrupt_before=["execute_refund"])]),
     r"interrupt_before of agent 'a' names none of its tools: execute_refund \(its tools: look_up"),
    (lambda: Supervisor([Supervisor([Agent("w", "W.")], name="inner")], interrupt_before=["inner"]),
     r"interrupt_before names the nested team inner: declare its breakpoints on its own team or agents"),
])
def test_a_breakpoint_that_would_never_pause_is_refused_where_the_team_is_defined(build, message: str) -> None:  # noqa: ANN001
    with pytest.raises(TeamError, match=message):
        build()


def question(**fields: object) -> Question:
    return Question(question_id="q1", kind="approval", text="?", agent="a", asked_at=datetime(2026, 1, 1, tzinfo=UTC),
                    timeout_seconds=60, **({"breakpoint": True} | fields))  # type: ignore[arg-type]


@pytest.mark.parametrize(("asked", "reply", "problem"), [
    (question(tool="t", arguments="{}"), HumanReply(question_id="q1", approved=True, arguments='{"x": 1}'), None),
    (question(tool="t", arguments="{}"), HumanReply(question_id="q1", approved=True, result="r"),
     "only a breakpoint after a tool call takes an edited result"),
    (question(tool="t", after=True, result="r"), HumanReply(question_id="q1", approved=True, result="new"), None),
    (question(tool="t", after=True, result="r"), HumanReply(question_id="q1", approved=True, arguments="{}"),
     "only a breakpoint before a tool call takes edited arguments"),
    (question(), HumanReply(question_id="q1", approved=True, arguments="{}"),
     "only a breakpoint before a tool call takes edited arguments"),
    (question(after=True, result="answered: hi"), HumanReply(question_id="q1", approved=True, result="x"),
     "only a breakpoint after a tool call takes an edited result"),
    (question(), HumanReply(question_id="q1", approved=False), None),
])
def test_which_edits_each_breakpoint_takes(asked: Question, reply: HumanReply, problem: str | None) -> None:
    state = ConversationState(pending={"q1": asked})
    assert reply_problem(state, reply) == problem


@pytest.mark.parametrize(("asked", "step"), [
    (question(tool="t", arguments='{"a": 1}'), 'breakpoint before t({"a": 1})'),
    (question(tool="t", arguments="{}", after=True, result="ok"), "breakpoint after t({}) returned: ok"),
    (question(), "breakpoint before a runs"),
    (question(after=True, result="hands off to b"), "breakpoint after a: hands off to b"),
    (question(tool="t", arguments="{}", breakpoint=False), "t({})"),
])
def test_what_a_person_reads_of_each_step(asked: Question, step: str) -> None:
    """What `pending`, `chat` and chat clients show of an approval (never "None(None)")."""
    assert asked.step == step


def test_a_chat_client_reads_a_breakpoint_as_a_yes_or_no_to_resume() -> None:
    from durable_teams.workflows.turn_states import question_text

    assert question_text(question()) == "[a] At a breakpoint before a runs. Resume? Reply yes or no."
    assert question_text(question(tool="t", arguments="{}", breakpoint=False)) == "[a] Approve t({})? Reply yes or no."


def test_pending_says_how_to_resume_edit_or_stop_each_breakpoint() -> None:
    from durable_teams.cli.console import format_question

    before = format_question("t1", question(tool="t", arguments="{}")).splitlines()[1:]
    after = format_question("t1", question(tool="t", arguments="{}", after=True, result="ok")).splitlines()[1:]
    agent = format_question("t1", question()).splitlines()[1:]
    assert before == ["  Resume or stop: breakpoint before t({})",
                      "  Reply: durable-teams approve t1 --question q1 [--arguments '{...}']   (or deny ... --reason '...')"]
    assert after[1] == "  Reply: durable-teams approve t1 --question q1 [--result '...']   (or deny ... --reason '...')"
    assert agent[0] == "  Resume or stop: breakpoint before a runs"
    assert "--" not in agent[1].split("   ")[0].replace("--question", "")
