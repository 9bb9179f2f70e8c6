"""Bad model behaviour gets a clear, typed outcome: nothing crashes, nothing loops forever."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.worker.scripted import ScriptedModel, call, calls, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Budgets, Message
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow

SIDE_EFFECTS: list[str] = []


def record(note: str) -> str:
    """Record a note (a tool with a visible side effect)."""
    SIDE_EFFECTS.append(note)
    return "recorded"


def team(**options: object) -> Supervisor:
    sup = faang.build()
    sup.agents = [*sup.agents, Agent("clerk", "You record notes.", tools=[record])]
    for key, value in options.items():
        setattr(sup, key, value)
    return sup


async def run(client: Client, task_queue: str, script: dict, sup: Supervisor, task: str = "go"):
    compiled = sup.compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=task),
            id=f"guard-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        result = await handle.result()
        full = await handle.query(TeamWorkflow.transcript, True)
    return result, full


def tool_answers(full: list[Message]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content or "" for m in full if m.role == "tool"}


async def test_a_tool_the_agent_does_not_own_is_never_run(client: Client, task_queue: str) -> None:
    SIDE_EFFECTS.clear()
    script = {
        "supervisor": [call("transfer_to_math_expert"), say("done")],
        "math_expert": [call("record", note="sneaky"), say("I cannot record.")],
    }
    result, full = await run(client, task_queue, script, team())
    assert result.answer == "done"
    assert SIDE_EFFECTS == []
    error = tool_answers(full)["call_math_expert_0_0"]
    assert error == "Error: record is not a tool available to math_expert. Available tools: add, multiply."


async def test_handoff_to_an_unknown_agent_is_answered_with_the_real_choices(client: Client, task_queue: str) -> None:
    script = {"supervisor": [call("transfer_to_lawyer"), say("No lawyer here.")]}
    result, full = await run(client, task_queue, script, team())
    assert result.answer == "No lawyer here."
    error = tool_answers(full)["call_supervisor_0_0"]
    assert error.startswith("Error: transfer_to_lawyer is not a tool available to supervisor.")
    assert "transfer_to_math_expert" in error and "transfer_to_clerk" in error


async def test_a_handoff_mixed_with_another_call_answers_every_call_in_order(client: Client, task_queue: str) -> None:
    SIDE_EFFECTS.clear()
    script = {
        "supervisor": [
            calls(("transfer_to_math_expert", {}), ("transfer_to_clerk", {}), ("add", {"a": 1, "b": 1})),
            say("done"),
        ],
        "math_expert": [say("math here")],
    }
    result, full = await run(client, task_queue, script, team(tools=[faang.add]))
    assert result.answer == "done"
    first = full[1]
    answers = [m for m in full if m.role == "tool" and m.tool_call_id in {c.id for c in first.tool_calls}]
    # one tool message per call, in call order, before control moved to math_expert
    assert [m.tool_call_id for m in answers] == [c.id for c in first.tool_calls]
    assert [m.content for m in answers] == [
        "Successfully transferred to math_expert",
        "Not transferred to clerk: only 1 agent(s) can be engaged per reply (parallel handoffs "
        "are off). math_expert is working on it; ask clerk afterwards if still needed.",
        "2.0",
    ]
    assert full.index(answers[-1]) < next(i for i, m in enumerate(full) if m.name == "math_expert")
    assert SIDE_EFFECTS == []  # clerk never ran


async def test_a_model_that_never_stops_calling_tools_is_ended_by_the_budget(client: Client, task_queue: str) -> None:
    def endless(req, messages, tools):  # noqa: ANN001, ANN202
        return call("add", a=1, b=req.agent_call_index) if req.agent == "math_expert" else call("transfer_to_math_expert")

    sup = team(budgets=Budgets(max_model_calls=7))
    result, full = await run(client, task_queue, endless, sup)  # type: ignore[arg-type]
    assert result.status == "budget_exceeded"
    assert result.model_calls == 7
    assert result.answer.startswith("Stopped: this turn used its budget of 7 model calls")
    # every tool call the model made was still answered
    calls_made = [c.id for m in full for c in m.tool_calls]
    assert set(calls_made) <= set(tool_answers(full)) | {c.id for m in full if m.kind == "handoff_back" for c in m.tool_calls}


def shout(text: str) -> str:
    """Return a very large text (a tool whose output is over the payload guard)."""
    return text * 300_000


async def test_oversized_tool_output_is_truncated_with_a_note(client: Client, task_queue: str) -> None:
    from durable_teams.activities.tool_activities import MAX_RESULT_BYTES

    sup = team()
    sup.agents = [*sup.agents, Agent("loud", "Shout.", tools=[shout])]
    script = {"supervisor": [call("transfer_to_loud"), say("ok")], "loud": [call("shout", text="ab"), say("shouted")]}
    result, full = await run(client, task_queue, script, sup)
    assert result.answer == "ok"
    output = tool_answers(full)["call_loud_0_0"]
    assert len(output.encode()) < MAX_RESULT_BYTES + 200
    assert output.endswith(f"[truncated: the tool returned 600,000 bytes; only the first {MAX_RESULT_BYTES:,} are shown]")


async def test_oversized_arguments_are_refused_before_scheduling(client: Client, task_queue: str) -> None:
    SIDE_EFFECTS.clear()
    script = {"supervisor": [call("transfer_to_clerk"), say("ok")],
              "clerk": [call("record", note="n" * 300_000), say("too big")]}
    _, full = await run(client, task_queue, script, team())
    assert tool_answers(full)["call_clerk_0_0"].startswith("Error: the arguments for record are 300,")
    assert SIDE_EFFECTS == []


async def test_local_tools_run_as_local_activities(client: Client, task_queue: str) -> None:
    from temporalio.api.enums.v1 import EventType

    from durable_teams.teams.tools import tool

    local_add = tool(faang.add, local=True)
    sup = team()
    sup.agents = [Agent("adder", "Add.", tools=[local_add])]
    script = {"supervisor": [call("transfer_to_adder"), say("3")], "adder": [call("add", a=1, b=2), say("3")]}
    compiled = sup.compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task="1+2"),
            id=f"local-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await handle.result()
        full = await handle.query(TeamWorkflow.transcript, True)
    history = await handle.fetch_history()
    scheduled = {e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                 if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
               and e.marker_recorded_event_attributes.marker_name != "core_patch"
               and b"tool: add" in e.user_metadata.summary.data]  # not the labels' local activity
    assert "run_tool" not in scheduled and "run_local_tool" not in scheduled
    assert len(markers) == 1  # the local activity's result, recorded once
    assert tool_answers(full)["call_adder_0_0"] == "3.0"
