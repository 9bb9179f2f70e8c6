"""Recorded histories replay under the current workflow code without non-determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_teams.workflows.a2a_push import A2APushWorkflow
from durable_teams.workflows.conversation import TeamWorkflow

pytestmark = pytest.mark.pure

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
WORKFLOW_IDS = {"nested_waiting_child": "nested_waiting/research_team-1",
                "nested_budget_stop_child": "nested_budget_stop/research_team-1"}
"""File stem -> workflow id, where the id cannot be a file name (a child's id has a slash)."""
PARKED = ["nested_waiting", "nested_waiting_child", "support_waiting_approval",
          "support_waiting_question", "support_labelled_waiting_question", "swarm_waiting_approval",
          "swarm_breakpoint_waiting", "swarm_after_tool_waiting"]
"""Recorded mid-wait: still running, waiting for a person (or, the parent, for its child)."""


def test_there_are_recorded_histories() -> None:
    """0.1.0's histories, the baseline, stay (docs/deployment.md, "Upgrading workers"): later
    releases only add."""
    assert {p.stem for p in HISTORIES} >= {
        "acme_conversation", "faang", "faang_teams", "routing_conversation",
        "nested_budget_stop", "nested_budget_stop_child", "concurrent_turns", "local_model_calls",
        "intents_conversation",
        *PARKED}


@pytest.mark.parametrize("stem", PARKED)
def test_parked_histories_end_in_a_wait(stem: str) -> None:
    path = Path(__file__).parent / "histories" / f"{stem}.json"
    events = WorkflowHistory.from_json(stem, path.read_text()).events
    kinds = [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in events]
    closed = {f"WORKFLOW_EXECUTION_{end}" for end in (
        "COMPLETED", "FAILED", "CONTINUED_AS_NEW", "TIMED_OUT", "TERMINATED", "CANCELED")}
    assert not closed & set(kinds)
    if stem == "nested_waiting":  # the parent waits for its child, which waits for the person
        assert "CHILD_WORKFLOW_EXECUTION_STARTED" in kinds
        assert "CHILD_WORKFLOW_EXECUTION_COMPLETED" not in kinds
    else:  # the question is flagged for `pending`, and its deadline timer runs
        last_task = len(kinds) - 1 - kinds[::-1].index("WORKFLOW_TASK_COMPLETED")
        # (later releases also update the memo: WORKFLOW_PROPERTIES_MODIFIED in between)
        assert kinds[last_task + 1] == "UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"
        assert kinds[-1] == "TIMER_STARTED"


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path) -> None:
    text = path.read_text()  # noqa: ASYNC240 - a small file
    history = WorkflowHistory.from_json(WORKFLOW_IDS.get(path.stem, path.stem), text)
    replayer = Replayer(workflows=[TeamWorkflow, A2APushWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


async def test_the_recorded_breakpoints_replay_to_what_each_person_decided() -> None:
    """swarm_breakpoints: before the agent (resumed), before the refund (edited arguments),
    after it (an edited result), after the agent (resumed); turn 2 stopped before the agent."""
    from types import SimpleNamespace

    from durable_teams.client.replay_state import replay_history

    path = Path(__file__).parent / "histories" / "swarm_breakpoints.json"
    history = WorkflowHistory.from_json("swarm_breakpoints", path.read_text())
    state = (await replay_history(SimpleNamespace(data_converter=pydantic_data_converter), history)).state  # type: ignore[arg-type]
    assert [(r.text, r.status) for r in state.replies.values()] == [
        ('done: (The user changed the arguments to {"order": "A2"} before it ran.) refund of A2 queued', "completed"),
        ("The user stopped support at a breakpoint before it ran: not now.", "cancelled")]
    tool = next(m for m in state.transcript.log if m.role == "tool")
    assert (tool.content, tool.name) == (
        '(The user changed the arguments to {"order": "A2"} before it ran.) refund of A2 queued', "execute_refund")
    assert state.questions_asked == 5 and not state.pending


async def test_a_replay_sees_every_question_put_up_the_answered_ones_too() -> None:
    """The seam time travel reads questions through (client/fork_state.py): `HumanDesk.on_ask`
    sees each question as it goes up during a replay, so one answered since (gone from
    `pending`) can be opened again; it changes nothing the replay does."""
    from types import SimpleNamespace

    from durable_teams.client.replay_state import replay_history
    from durable_teams.workflows.state import Question

    path = Path(__file__).parent / "histories" / "swarm_breakpoints.json"
    history = WorkflowHistory.from_json("swarm_breakpoints", path.read_text())
    asked: list[Question] = []
    instance = await replay_history(SimpleNamespace(data_converter=pydantic_data_converter), history,  # type: ignore[arg-type]
                                    on_start=lambda conversation: conversation.desk.on_ask.append(asked.append))
    assert [q.question_id for q in asked] == list(instance.state.answers) == ["q1", "q2", "q3", "q4", "q5"]
    assert all(q.breakpoint for q in asked) and instance.state.pending == {}
