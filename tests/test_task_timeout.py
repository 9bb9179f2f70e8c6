"""Conversations start with a 30 s workflow task timeout (client/start.py TASK_TIMEOUT), and
keep it in their children and across continue-as-new: with local calls the conversation's
workflow task stays open, and Temporal's 10 s left it no room when a worker was busy."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio.client import Client, WorkflowHandle

from durable_teams.client.send import send_turn
from durable_teams.client.start import TASK_TIMEOUT, start_conversation
from durable_teams.examples import faang, faang_teams
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelCalls
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import script, team_with_threshold

pytestmark = pytest.mark.workflow


async def task_timeout(handle: WorkflowHandle) -> timedelta:
    described = await handle.describe()
    return described.raw_description.execution_config.default_workflow_task_timeout.ToTimedelta()


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_conversation_and_its_nested_teams_run_with_a_30_s_task_timeout(
        client: Client, task_queue: str) -> None:
    compiled = faang_teams.build().compile()
    compiled.spec.model_calls = ModelCalls(local=True)
    async with running_worker(client, task_queue, [compiled], ScriptedModel(faang_teams.SCRIPT)):
        handle = await start_conversation(client, "faang-teams", ConversationInput(
            team=compiled.spec, task=faang.QUESTION), id=f"tt-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        result = await handle.result()
        children = [client.get_workflow_handle(f"{handle.id}/{name}") for name in ("research_team-1", "math_team-2")]
        timeouts = [await task_timeout(h) for h in (handle, *children)]
        chosen = await start_conversation(client, "faang-teams", ConversationInput(
            team=compiled.spec, task=faang.QUESTION), id=f"tt-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
            task_timeout=timedelta(seconds=12))
        await chosen.result()
        chosen_child = client.get_workflow_handle(f"{chosen.id}/math_team-2")
        chosen_timeouts = [await task_timeout(chosen), await task_timeout(chosen_child)]
    assert result.answer == faang.ANSWER
    assert TASK_TIMEOUT == timedelta(seconds=30)
    assert timeouts == [TASK_TIMEOUT] * 3
    assert chosen_timeouts == [timedelta(seconds=12)] * 2  # the caller's choice, children too


@pytest.mark.slow  # a conversation that continues as new: over a second, 15 s under load
async def test_the_task_timeout_crosses_continue_as_new(client: Client, task_queue: str) -> None:
    team = team_with_threshold(40)
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await start_conversation(client, "long", ConversationInput(team=team.spec, single_turn=False),
                                          id=f"tt-can-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first_run = (await handle.describe()).run_id
        latest = client.get_workflow_handle(handle.id)
        for n in range(12):
            await send_turn(client, handle.id, f"turn {n}")
            if (await latest.describe()).run_id != first_run:
                break
        assert (await latest.describe()).run_id != first_run, "never continued as new"
        assert await task_timeout(latest) == TASK_TIMEOUT
        await latest.signal(TeamWorkflow.close)
