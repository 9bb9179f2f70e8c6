"""Model calls as regular activities (`ModelCalls(local=False)`) run on the worker that holds
the conversation, and fall back to the shared task queue when that worker is gone
(workflows/placement.py). Local ones (opt-in, `ModelCalls(local=True)`) need none of this:
tests/test_local_model_calls.py."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import Client, WorkflowHandle

from durable_teams.activities.view_cache import ViewCache, ViewReader
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelCalls, ModelRequest, ModelView
from durable_teams.workflows.placement import LOCATE_ACTIVITY
from durable_teams.workflows.state import ConversationInput, HumanReply

from .waiting import pending_question

pytestmark = pytest.mark.workflow

RUNS: list[str] = []


def record(note: str) -> str:
    """A side effect: appends to RUNS."""
    RUNS.append(note)
    return "recorded"


CALLS = 4
SCRIPT = {"writer": [call("record", note=f"n{i}") for i in range(CALLS - 1)] + [say("done")]}
TEAM = Swarm([Agent("writer", "Record notes.", tools=[record], model="scripted")]).compile()
TEAM.spec.model_calls = ModelCalls(local=False, worker_queue_seconds=1.0)
ASKING = Swarm([Agent("asker", "Ask, then record.", tools=["ask_human", record], model="scripted")]).compile()
ASKING.spec.model_calls = ModelCalls(local=False, worker_queue_seconds=1.0)
ASK_SCRIPT = {"asker": [call("record", note="first"), call("ask_human", question="Go?"),
                        call("record", note="approved"), say("done")]}


def first_call_elsewhere() -> ViewReader:
    """A view reader reporting the first call of each agent as read in another process."""
    cache = ViewCache(live=False)

    async def read(req: ModelRequest) -> ModelView:
        view = await cache.read(req)
        return view.model_copy(update={"in_process": req.agent_call_index > 0})

    return read


async def model_calls(handle: WorkflowHandle) -> list[tuple[str, str, str, str]]:
    """(task queue, identity of the worker whose workflow task scheduled it, identity that
    started it, how it ended) for every `call_model` attempt chain, in order."""
    events = [e async for e in handle.fetch_history_events()]
    by_id = {e.event_id: e for e in events}
    out: dict[int, list[str]] = {}
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = e.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == "call_model":
                wft = by_id[attrs.workflow_task_completed_event_id]
                out[e.event_id] = [attrs.task_queue.name,
                                   wft.workflow_task_completed_event_attributes.identity, "", ""]
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs_s = e.activity_task_started_event_attributes
            if attrs_s.scheduled_event_id in out:
                out[attrs_s.scheduled_event_id][2] = attrs_s.identity
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            scheduled = e.activity_task_completed_event_attributes.scheduled_event_id
            if scheduled in out:
                out[scheduled][3] = "completed"
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            attrs_t = e.activity_task_timed_out_event_attributes
            if attrs_t.scheduled_event_id in out:
                kind = attrs_t.failure.timeout_failure_info.timeout_type
                out[attrs_t.scheduled_event_id][3] = TimeoutType.Name(kind)
    return [(q, by, started, end) for q, by, started, end in out.values()]


@pytest.mark.slow  # two workers, four conversations of ten activities each: over a second idle, 3 s in CI
async def test_model_calls_run_on_the_worker_holding_the_workflow(client: Client, task_queue: str) -> None:
    """Two workers on one queue. Both report every view as read elsewhere (as two processes
    would when a call lands on the other one), so every call after the first asks where the
    workflow is and is scheduled on that worker's own queue: it must run there."""
    address = client.service_client.config.target_host
    other = await Client.connect(address, namespace=client.namespace, data_converter=client.data_converter)
    workers = [
        build_worker(c, [TEAM], ScriptedModel(SCRIPT), task_queue=task_queue, identity=name,
                     view_reader=ViewCache(live=False).read)
        for c, name in ((client, "worker-a"), (other, "worker-b"))
    ]
    own_queues = {w.worker_queue: name for w, name in zip(workers, ("worker-a", "worker-b"), strict=True)}
    async with workers[0], workers[1]:
        handles = [await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="go", set_search_attributes=False),
            id=f"placed-{uuid.uuid4().hex[:8]}", task_queue=task_queue) for _ in range(4)]
        results = await asyncio.gather(*(h.result() for h in handles))
        histories = [await model_calls(h) for h in handles]
    assert [r.status for r in results] == ["completed"] * 4
    for calls in histories:
        assert len(calls) == CALLS
        assert calls[0][0] == task_queue  # the first call: the shared queue
        for queue, scheduled_by, started_by, end in calls[1:]:
            assert own_queues[queue] == scheduled_by == started_by
            assert end == "completed"


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_call_waiting_for_a_gone_worker_runs_on_the_shared_queue(client: Client, task_queue: str) -> None:
    """Worker A holds a conversation that waits for a person, and stops; worker B takes over.
    The next model call was to go to A's own queue: after `ModelCalls.worker_queue_seconds` it
    runs on the shared queue instead, and the approved side effect happens once."""
    RUNS.clear()
    address = client.service_client.config.target_host
    other = await Client.connect(address, namespace=client.namespace, data_converter=client.data_converter)
    a = build_worker(client, [ASKING], ScriptedModel(ASK_SCRIPT), task_queue=task_queue, identity="worker-a",
                     view_reader=first_call_elsewhere(), sticky_queue_schedule_to_start_timeout=_seconds(1))
    async with a:
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=ASKING.spec, task="go", set_search_attributes=False),
            id=f"fallback-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        question = await pending_question(handle)
    b = build_worker(other, [ASKING], ScriptedModel(ASK_SCRIPT), task_queue=task_queue, identity="worker-b")
    async with b:
        await handle.signal(TeamWorkflow.human_reply, HumanReply(question_id=question.question_id, text="yes"))
        result = await asyncio.wait_for(handle.result(), timeout=60)
        calls = await model_calls(handle)
    assert result.status == "completed"
    assert RUNS == ["first", "approved"]  # each once
    # the call B scheduled for A never started there, and ran on the shared queue
    assert calls[2] == (a.worker_queue, "worker-b", "", "TIMEOUT_TYPE_SCHEDULE_TO_START")
    assert calls[3][:3] == (task_queue, "worker-b", "worker-b")
    assert calls[-1][2] == "worker-b" and calls[-1][3] == "completed"
    assert calls[1] == (a.worker_queue, "worker-a", "worker-a", "completed")  # pinned to A


async def test_a_workflow_on_a_worker_without_its_own_queue_stays_on_the_shared_one(
    client: Client, task_queue: str
) -> None:
    """A worker built by hand, without the `worker_task_queue` activity, keeps working: its
    conversations' model calls stay on the shared queue (no workflow task fails over it)."""
    from temporalio.worker import Worker

    other = await Client.connect(client.service_client.config.target_host, namespace=client.namespace,
                                 data_converter=client.data_converter)
    built = build_worker(other, [TEAM], ScriptedModel(SCRIPT), task_queue=task_queue,
                         view_reader=ViewCache(live=False).read)  # never started: its parts are used
    shared = built.shared
    bare = Worker(client, task_queue=task_queue, workflows=[TeamWorkflow],
                  activities=[a for a in shared._config["activities"]  # type: ignore[index]
                              if getattr(a, "__temporal_activity_definition").name != LOCATE_ACTIVITY],
                  workflow_runner=shared._config["workflow_runner"])  # type: ignore[index]
    async with bare:
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="go", set_search_attributes=False),
            id=f"bare-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        result = await handle.result()
        calls = await model_calls(handle)
        markers = [e async for e in handle.fetch_history_events()
                   if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert result.status == "completed"
    assert [q for q, *_ in calls] == [task_queue] * CALLS
    assert not [m for m in markers if m.marker_recorded_event_attributes.marker_name == "core_local_activity"]


def _seconds(value: float):  # noqa: ANN202
    from datetime import timedelta

    return timedelta(seconds=value)
