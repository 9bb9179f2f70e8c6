"""`durable-teams pending` lists every question it can read, and says in one line which
conversations it cannot (encrypted under a key this client lacks): one such conversation used
to fail the whole listing."""

from __future__ import annotations

import base64
import os
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.client.connection import connect
from durable_teams.client.server_state import pending_questions
from durable_teams.encryption.codec import KEY_ENV, KEY_FILE_ENV
from durable_teams.gateway.core.threads import Gateway
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    if messages[-1]["role"] == "user":
        return call("ask_human", question="Which order do you mean?")
    return say("On its way.")


DESK = Swarm([Agent("desk", "Help with orders.", tools=["ask_human"])], name="desk").compile()


async def waiting(client: Client, task_queue: str, wid: str) -> None:
    """A conversation `wid` waiting on a question, through `client` (and its codec)."""
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="desk", task="Where is my order?"),
            id=wid, task_queue=task_queue)
        await pending_question(handle)


async def test_pending_lists_what_it_can_read_and_names_what_it_cannot(client: Client, task_queue: str) -> None:
    key = f"elsewhere:{base64.b64encode(os.urandom(32)).decode()}"
    sealed = await connect(client.service_client.config.target_host, encryption=key)
    plain_id, sealed_id = f"desk-plain-{uuid.uuid4().hex[:6]}", f"desk-sealed-{uuid.uuid4().hex[:6]}"
    await waiting(client, task_queue, plain_id)
    await waiting(sealed, f"{task_queue}-sealed", sealed_id)
    try:
        env = cli_env(client, task_queue)
        env.pop(KEY_ENV, None)
        listed = await run_cli("pending", env=env, timeout=60)
        unreadable: list[tuple[str, str]] = []
        in_process = await pending_questions(client, unreadable=unreadable)
        inbox = await Gateway(client, task_queue).pending()
    finally:
        for handle in (client.get_workflow_handle(plain_id), client.get_workflow_handle(sealed_id)):
            await handle.terminate()
    assert listed.code == 0, listed
    assert f"{plain_id}  q1  asked by desk at " in listed.out and "  Question: Which order do you mean?" in listed.out
    assert sealed_id not in listed.out
    notes = [line for line in listed.err.splitlines() if sealed_id in line]
    assert notes == [f"durable-teams: the questions of {sealed_id} cannot be read here: this conversation is "
                     f"encrypted (key id 'elsewhere') and no key is configured: set {KEY_ENV} or "
                     f"{KEY_FILE_ENV}"], listed.err
    assert "Traceback" not in listed.both
    assert plain_id in {wid for wid, _ in in_process} and sealed_id in dict(unreadable)
    # the gateway's inbox likewise: the readable question listed, the other left out (and logged)
    assert plain_id in {q["thread_id"] for q in inbox} and sealed_id not in {q["thread_id"] for q in inbox}
