"""Model calls as local activities (opt-in, `ModelCalls(local=True)`): what a user relies on.

A call longer than the workflow task timeout completes (the SDK heartbeats the workflow task),
a worker killed with SIGKILL in the middle of a call costs one repeat of that call on the worker
that takes the conversation over, and `ModelCalls(local=False)` keeps regular activities, per
team or per agent.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from temporalio.client import Client

from bench import procs
from bench.failover import holder
from bench.teams import http_team
from durable_teams.teams.builders import Agent, Supervisor, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelCalls
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .inspect_history import event_kinds
from .teams import LOCAL, LOCAL_MARKER, SlowModel
from .waiting import until

pytestmark = pytest.mark.workflow


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_model_call_longer_than_the_workflow_task_timeout_completes_once(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("a", "Answers.", model="scripted")], model_calls=LOCAL).compile()
    model = SlowModel({"a": [say("late, but here")]}, seconds=6.5)
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="hi", set_search_attributes=False),
            id=f"long-{uuid.uuid4().hex[:6]}", task_queue=task_queue, task_timeout=timedelta(seconds=3))
        result = await asyncio.wait_for(handle.result(), 60)
    assert (result.status, result.answer) == ("completed", "late, but here")
    assert model.began == 1  # never timed out, never repeated
    kinds = await event_kinds(handle)
    assert kinds[LOCAL_MARKER] == 1
    assert kinds["WORKFLOW_TASK_TIMED_OUT"] == 0
    assert kinds["WORKFLOW_TASK_COMPLETED"] >= 3  # the SDK's heartbeats of the open workflow task
    assert kinds["call_model"] == 0


async def test_model_calls_stay_regular_activities_where_a_team_or_agent_asks(
        client: Client, task_queue: str) -> None:
    regular = ModelCalls(local=False)
    team = Supervisor([Agent("worker", "Works.", model="scripted", model_calls=regular)],
                      supervisor_name="boss", model="scripted", model_calls=LOCAL).compile()
    script = {"boss": [call("transfer_to_worker"), say("all done")], "worker": [say("worked")]}
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="go", set_search_attributes=False),
            id=f"mixed-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        result = await handle.result()
        assert (result.status, result.answer) == ("completed", "all done")
        kinds = await event_kinds(handle)
        assert (kinds[LOCAL_MARKER], kinds["call_model"]) == (2, 1)  # the boss's two, the worker's one

        team.spec.model_calls = regular  # the whole team
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="go", set_search_attributes=False),
            id=f"regular-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        assert (await handle.result()).answer == "all done"
        kinds = await event_kinds(handle)
        assert (kinds[LOCAL_MARKER], kinds["call_model"]) == (0, 3)


MODEL_SECONDS = 8.0
TASK_TIMEOUT = 4.0


@pytest.mark.slow  # starts worker processes
async def test_kill9_in_the_middle_of_a_local_model_call_repeats_it_once_elsewhere(
        client: Client, task_queue: str) -> None:
    """Two worker processes; the one running the conversation's model call (its workflow task
    heartbeated: the worker is in its history) is killed. The other takes the conversation
    over once the workflow task times out, and runs the call again: two requests in all."""
    address = client.service_client.config.target_host
    server, url = await procs.model_server(MODEL_SECONDS, 0.0)
    workers = await asyncio.gather(*(procs.worker(address, task_queue, "--model-url", url,
                                                  "--sticky-seconds", "1") for _ in range(2)))
    try:
        spec = replace(http_team(1).spec, **{"model_calls": LOCAL})
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=spec, task="read", set_search_attributes=False),
            id=f"kill-1-{uuid.uuid4().hex[:6]}", task_queue=task_queue,
            task_timeout=timedelta(seconds=TASK_TIMEOUT))
        held = await until(lambda: holder(handle), "the first heartbeat naming the worker", 60, every=0.1)
        assert await procs.model_requests(url) == 1
        assert (await event_kinds(handle))[LOCAL_MARKER] == 0  # the call is still in flight
        victim = next(p for p in workers if p.identity == held)
        victim.kill9()
        assert await asyncio.wait_for(victim.proc.wait(), 30) == -9
        result = await asyncio.wait_for(handle.result(), 90)
        assert (result.status, result.answer) == ("completed", "done")
        assert await procs.model_requests(url) == 2  # the killed call, once more on the survivor
        assert await holder(handle) == ""
        kinds = await event_kinds(handle)
        assert kinds[LOCAL_MARKER] == 1
    finally:
        for p in workers:
            if p.proc.returncode is None:
                await p.stop(within=30)
        server.kill9()
