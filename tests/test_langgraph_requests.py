"""A LangGraph run request read strictly (gateway/doors/langgraph/langgraph_requests.py): a
run's breakpoints and metadata, a run without input (on past a breakpoint), and what a
breakpoint takes as its resume value. Pure: no server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from durable_teams.gateway.core.requests import BadRequest
from durable_teams.gateway.doors.langgraph.langgraph_requests import answer_of, run_request
from durable_teams.gateway.doors.langgraph.langgraph_wire import Unsupported
from durable_teams.workflows.state import Question

pytestmark = pytest.mark.pure

TURN = {"assistant_id": "faang", "input": {"messages": [{"role": "user", "content": "hi"}]}}


def test_a_runs_breakpoints_and_metadata_are_read_with_its_turn() -> None:
    asked = run_request(TURN | {"interrupt_before": "*", "interrupt_after": ["math_expert"],
                                "metadata": {"source": "ui"}})
    assert (asked.interrupt_before, asked.interrupt_after, asked.metadata) == (["*"], ["math_expert"], {"source": "ui"})
    assert asked.text == "hi" and not asked.resuming


@pytest.mark.parametrize(("extra", "error", "message"), [
    ({"interrupt_before": "math_expert"}, BadRequest, "'interrupt_before' is \"*\" or a list of agents' names"),
    ({"interrupt_after": [1]}, BadRequest, "'interrupt_after' is \"*\" or a list"),
    ({"metadata": ["a"]}, BadRequest, "'metadata' is an object"),
    ({"metadata": {"x": "y" * 20_000}}, BadRequest, "'metadata' is over 16,384 bytes as JSON"),
    ({"input": None, "interrupt_before": ["a"]}, Unsupported, "on a run that resumes"),
    ({"input": None, "command": {"resume": True}, "metadata": {"a": 1}}, Unsupported, "on a run that resumes"),
    ({"context": {"user": "ada"}}, Unsupported, "run context (the team's definition is its configuration)"),
    ({"config": {"configurable": {"model": "gpt", "user_id": "u"}, "tags": ["t"]}}, Unsupported,
     "run config tags, configurable.model, configurable.user_id (the team's definition"),
    ({"config": "fast"}, BadRequest, "'config' is an object"),
])
def test_what_a_run_may_not_ask_is_refused_by_name(extra: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        run_request(TURN | extra)
    assert message in str(getattr(raised.value, "detail", raised.value))


def test_a_recursion_limit_alone_is_taken() -> None:
    assert run_request(TURN | {"config": {"recursion_limit": 50}}).text == "hi"


def test_a_run_without_input_goes_on_past_a_breakpoint() -> None:
    asked = run_request({"assistant_id": "faang"})
    assert asked.resuming and asked.continuing and asked.resume is None


def test_a_breakpoint_takes_no_value_or_a_strict_yes_or_no() -> None:
    asked = {"agent": "math_expert", "text": "?", "kind": "approval", "breakpoint": True,
             "asked_at": datetime(2026, 1, 1, tzinfo=UTC), "timeout_seconds": 60.0}
    before, after = Question(question_id="q1", **asked), Question(question_id="q2", after=True, **asked)
    assert answer_of(None, before) == {"text": "yes", "approved": True}
    assert answer_of(False, before) == {"text": "no", "approved": False}
    assert answer_of({"q2": "yes"}, after) == {"text": "yes", "approved": True}
    with pytest.raises(BadRequest, match="may math_expert run"):
        answer_of("maybe", before)
    with pytest.raises(BadRequest, match="may the team past the breakpoint after math_expert run"):
        answer_of("maybe", after)
