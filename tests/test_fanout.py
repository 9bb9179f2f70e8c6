"""Parallel fan-out from a supervisor, its cap, and forward_message, on a real Temporal server.

Concurrency is proved from the workflow history: each worker calls a tool whose own latency
is a fraction of a second, and the tool activities' [started, completed] intervals, as the
server recorded them, overlap.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, replace
from datetime import datetime

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.worker.scripted import ScriptedModel, call, calls, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.definition_checks import TeamError, validate_team
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput, ConversationResult

from .conftest import running_worker

pytestmark = pytest.mark.workflow


async def slow_lookup(topic: str, seconds: float) -> str:
    """Look a topic up in a slow back-end (the latency is the tool's own)."""
    await asyncio.sleep(seconds)
    return f"{topic}: found"


def team(**options: object) -> Supervisor:
    agents = [Agent(name, f"You research {name}.", tools=[slow_lookup]) for name in ("alpha", "beta", "gamma")]
    return Supervisor(agents, instructions="Fan the work out.", name="fanout", **options)  # type: ignore[arg-type]


FAN_OUT = calls(("transfer_to_alpha", {}), ("transfer_to_beta", {}), ("transfer_to_gamma", {}))


def worker_script(name: str, seconds: float) -> list[Message]:
    return [call("slow_lookup", topic=name, seconds=seconds), say(f"{name} report")]


@dataclass
class Run:
    handle: WorkflowHandle
    result: ConversationResult
    shared: list[Message]
    full: list[Message]
    model: ScriptedModel


async def run(client: Client, task_queue: str, sup: Supervisor, script: dict) -> Run:
    compiled = sup.compile()
    model = ScriptedModel(script)
    async with running_worker(client, task_queue, [compiled], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task="research all three"),
            id=f"fanout-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        result = await handle.result()
        shared = await handle.query(TeamWorkflow.transcript)
        full = await handle.query(TeamWorkflow.transcript, True)
    return Run(handle, result, shared, full, model)


async def tool_intervals(handle: WorkflowHandle) -> dict[str, tuple[datetime, datetime]]:
    """agent -> (started, completed) of its `run_tool` activity, from the server's history."""
    history = await handle.fetch_history()
    agent_of: dict[int, str] = {}
    started: dict[int, datetime] = {}
    out: dict[str, tuple[datetime, datetime]] = {}
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = e.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == "run_tool":
                agent_of[e.event_id] = json.loads(attrs.input.payloads[0].data)["agent"]
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[e.activity_task_started_event_attributes.scheduled_event_id] = e.event_time.ToDatetime()
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            scheduled = e.activity_task_completed_event_attributes.scheduled_event_id
            if scheduled in agent_of:
                out[agent_of[scheduled]] = (started[scheduled], e.event_time.ToDatetime())
    return out


def model_calls_by(model: ScriptedModel) -> list[str]:
    return [req.agent for req, _, _ in model.requests]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_parallel_handoffs_run_the_agents_concurrently(client: Client, task_queue: str) -> None:
    # The first-called agent is the slowest, so finishing order (gamma, beta, alpha) is the
    # reverse of call order: the transcript must still fold results back in call order.
    script = {
        "supervisor": [FAN_OUT, say("all three reported")],
        "alpha": worker_script("alpha", 1.2),
        "beta": worker_script("beta", 0.9),
        "gamma": worker_script("gamma", 0.6),
    }
    r = await run(client, task_queue, team(parallel_tool_calls=True), script)
    assert r.result.answer == "all three reported"

    intervals = await tool_intervals(r.handle)
    assert set(intervals) == {"alpha", "beta", "gamma"}
    latest_start = max(start for start, _ in intervals.values())
    earliest_end = min(end for _, end in intervals.values())
    assert latest_start < earliest_end, f"tool runs did not overlap: {intervals}"
    assert intervals["gamma"][1] < intervals["alpha"][1]  # gamma really finished first
    # the whole fan-out took about the slowest tool, not the sum of the three
    span = max(e for _, e in intervals.values()) - min(s for s, _ in intervals.values())
    assert span.total_seconds() < 1.2 + 0.9

    fan_out = r.shared[1]
    assert [c.name for c in fan_out.tool_calls] == ["transfer_to_alpha", "transfer_to_beta", "transfer_to_gamma"]
    assert [(m.role, m.name, m.content) for m in r.shared[2:]] == [
        ("tool", "transfer_to_alpha", "Successfully transferred to alpha"),
        ("tool", "transfer_to_beta", "Successfully transferred to beta"),
        ("tool", "transfer_to_gamma", "Successfully transferred to gamma"),
        ("assistant", "alpha", "alpha report"),
        ("assistant", "alpha", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "beta", "beta report"),
        ("assistant", "beta", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "gamma", "gamma report"),
        ("assistant", "gamma", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "supervisor", "all three reported"),
    ]
    # the supervisor's second call saw the three reports, in call order
    _, seen, _ = [q for q in r.model.requests if q[0].agent == "supervisor"][1]
    reports = [m["content"] for m in seen if m.get("name") in ("alpha", "beta", "gamma")
               and m["content"].endswith("report")]
    assert reports == ["alpha report", "beta report", "gamma report"]
    # each tool output went to the agent that asked for it
    outputs = {m.agent_run: m.content for m in r.full if m.role == "tool" and m.name == "slow_lookup"}
    runs = {m.agent_run: m.name for m in r.full if m.role == "assistant" and m.agent_run}
    assert {runs[s]: out for s, out in outputs.items()} == {
        "alpha": "alpha: found", "beta": "beta: found", "gamma": "gamma: found"}


async def test_without_parallel_tool_calls_only_the_first_handoff_runs(client: Client, task_queue: str) -> None:
    script = {  # beta and gamma have no script: if either ran, the turn would fail
        "supervisor": [FAN_OUT, say("alpha alone")],
        "alpha": worker_script("alpha", 0.1),
    }
    r = await run(client, task_queue, team(parallel_tool_calls=False), script)
    assert r.result.answer == "alpha alone"
    assert model_calls_by(r.model) == ["supervisor", "alpha", "alpha", "supervisor"]
    answers = [m.content for m in r.shared[2:5]]
    assert answers == [
        "Successfully transferred to alpha",
        "Not transferred to beta: only 1 agent(s) can be engaged per reply (parallel handoffs "
        "are off). alpha is working on it; ask beta afterwards if still needed.",
        "Not transferred to gamma: only 1 agent(s) can be engaged per reply (parallel handoffs "
        "are off). alpha is working on it; ask gamma afterwards if still needed.",
    ]
    assert [m.tool_call_id for m in r.shared[2:5]] == [c.id for c in r.shared[1].tool_calls]
    assert set(await tool_intervals(r.handle)) == {"alpha"}
    assert r.model.requests[0][0].parallel_tool_calls is False  # the model was told, too


async def test_max_parallel_handoffs_caps_the_fan_out(client: Client, task_queue: str) -> None:
    script = {
        "supervisor": [FAN_OUT, say("two of three")],
        "alpha": worker_script("alpha", 0.5),
        "beta": worker_script("beta", 0.5),
    }
    r = await run(client, task_queue, team(parallel_tool_calls=True, max_parallel_handoffs=2), script)
    assert r.result.answer == "two of three"
    assert sorted(set(model_calls_by(r.model))) == ["alpha", "beta", "supervisor"]
    refused = r.shared[4]
    assert refused.tool_call_id == r.shared[1].tool_calls[2].id
    assert refused.content is not None
    assert refused.content.startswith(
        "Not transferred to gamma: only 2 agent(s) can be engaged per reply")
    assert "alpha, beta is working on it; ask gamma afterwards if still needed." in refused.content
    intervals = await tool_intervals(r.handle)
    assert set(intervals) == {"alpha", "beta"}
    assert max(s for s, _ in intervals.values()) < min(e for _, e in intervals.values())


async def test_the_cap_refusal_does_not_claim_parallel_handoffs_are_off(client: Client, task_queue: str) -> None:
    script = {
        "supervisor": [FAN_OUT, say("two of three")],
        "alpha": worker_script("alpha", 0.05),
        "beta": worker_script("beta", 0.05),
    }
    r = await run(client, task_queue, team(parallel_tool_calls=True, max_parallel_handoffs=2), script)
    refusal = r.shared[4].content or ""
    assert "parallel handoffs are off" not in refusal
    assert "only 2 agent(s)" in refusal and "cap on parallel handoffs" in refusal


@pytest.mark.parametrize("back_messages", [True, False])
async def test_forward_message_returns_the_workers_reply_verbatim(
    client: Client, task_queue: str, back_messages: bool
) -> None:
    verbatim = "  Final figures:\n| a | 1 |\n| b | 2 |\n\n— alpha  "
    script = {
        "supervisor": [call("transfer_to_alpha"), call("forward_message", from_agent="alpha")],
        "alpha": [call("slow_lookup", topic="alpha", seconds=0.01), say(verbatim)],
    }
    sup = team(tools=["forward_message"], add_handoff_back_messages=back_messages)
    r = await run(client, task_queue, sup, script)
    assert r.result.answer == verbatim
    assert r.result.agent == "supervisor"
    assert model_calls_by(r.model) == ["supervisor", "alpha", "alpha", "supervisor"]  # no third call
    forwarded = [m for m in r.shared if m.name == "forward_message"]
    assert [m.content for m in forwarded] == ["Forwarded the latest message from alpha."]
    last = r.shared[-1]
    assert (last.role, last.name, last.content) == ("assistant", "supervisor", verbatim)


async def test_forward_message_from_an_agent_that_never_spoke_is_an_error_the_model_sees(
    client: Client, task_queue: str
) -> None:
    script = {
        "supervisor": [call("transfer_to_alpha"), call("forward_message", from_agent="beta"),
                       say("alpha says hi")],
        "alpha": [say("hi")],
    }
    r = await run(client, task_queue, team(tools=["forward_message"]), script)
    assert r.result.answer == "alpha says hi"
    error = next(m for m in r.shared if m.name == "forward_message")
    assert error.kind == "error"
    assert error.content == "Could not find message from source agent beta. Found names: ['alpha', 'supervisor']"


def combine(results: list[dict]) -> str:
    """Join the workers' answers into one report."""
    return " | ".join(f"{r['agent']}={r['answer']}" for r in results)


@pytest.mark.parametrize("aggregate", ["concatenate", combine])
async def test_fanned_out_answers_are_aggregated_without_another_supervisor_call(
    client: Client, task_queue: str, aggregate: object
) -> None:
    script = {"supervisor": [FAN_OUT]} | {n: worker_script(n, 0.01) for n in ("alpha", "beta", "gamma")}
    r = await run(client, task_queue, team(parallel_tool_calls=True, aggregate=aggregate), script)
    if aggregate == "concatenate":
        expected = "alpha: alpha report\n\nbeta: beta report\n\ngamma: gamma report"
    else:
        expected = "alpha=alpha report | beta=beta report | gamma=gamma report"
        scheduled = [e.activity_task_scheduled_event_attributes
                     for e in (await r.handle.fetch_history()).events
                     if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
        combined = [json.loads(a.input.payloads[0].data) for a in scheduled
                    if a.activity_type.name == "run_tool" and "combine" in a.input.payloads[0].data.decode()]
        assert [c["tool"] for c in combined] == ["combine"]
    assert (r.result.answer, r.result.agent) == (expected, "supervisor")
    assert model_calls_by(r.model).count("supervisor") == 1
    assert (r.shared[-1].name, r.shared[-1].content) == ("supervisor", expected)


def test_an_unknown_aggregate_tool_is_refused_before_anything_runs() -> None:
    spec = team(aggregate="concatenate").compile().spec
    assert spec.supervisor is not None
    bad = replace(spec, **{"supervisor": replace(spec.supervisor, aggregate="summarise")})
    with pytest.raises(TeamError, match="aggregate names unknown tool 'summarise'"):
        validate_team(bad)
