"""Breakpoints after a tool call answered through the doors a person uses: the CLI's
`approve --result` and the gateway's `"result"` (an edited result the model sees)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .gateway_helpers import inbox_questions, running_gateway
from .time_travel_team import REFUNDS, execute_refund, support_model
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a CLI process, a gateway


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


def after_refund() -> CompiledTeam:
    return Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_after=["execute_refund"]).compile()


async def test_an_edited_result_through_the_cli(client: Client, task_queue: str) -> None:
    team = after_refund()
    env = cli_env(client)
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"bp-cli-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        await pending_question(handle)
        denied_with_result = await run_cli("deny", handle.id, "--result", "x", env=env)
        with_arguments = await run_cli("approve", handle.id, "--arguments", '{"order": "B"}', env=env)
        edited = await run_cli("approve", handle.id, "--result", "refund of A1 queued", env=env)
        reply = await turn
    assert denied_with_result.code == 2 and "unrecognized arguments: --result" in denied_with_result.err
    assert with_arguments.code == 1, with_arguments.both
    assert "only a breakpoint before a tool call takes edited arguments" in with_arguments.both
    assert edited.code == 0, edited.both
    assert reply.text == "done: refund of A1 queued" and REFUNDS == {"A1": 1}


async def test_an_edited_result_over_http(client: Client, task_queue: str) -> None:
    team = after_refund()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": team.spec.name})).json()["thread_id"]
        turn = asyncio.ensure_future(send_turn(client, thread, "refund A1"))
        question = await pending_question(client.get_workflow_handle(thread))
        mine = await inbox_questions(http, thread)  # other tests' threads may wait too
        path = f"/threads/{thread}/questions/{question.question_id}"
        not_text = await http.post(path, json={"approved": True, "result": {"x": 1}})
        denied = await http.post(path, json={"approved": False, "result": "x"})
        arguments = await http.post(path, json={"approved": True, "arguments": {"order": "B"}})
        resumed = await http.post(path, json={"approved": True, "result": "refund of A1 queued"})
        reply = await turn
    assert [(q["tool"], q["breakpoint"], q["after"], q["result"]) for q in mine] == [
        ("execute_refund", True, True, "refunded A1")]
    assert not_text.status_code == 400 and denied.status_code == 400
    assert "'result' must be a string, sent with approved=true" in denied.json()["error"]["message"]
    assert arguments.status_code in (400, 409), arguments.text
    assert "edited arguments" in arguments.json()["error"]["message"]
    assert resumed.status_code == 200
    assert reply.text == "done: refund of A1 queued" and REFUNDS == {"A1": 1}
