"""The Temporal client's own path, with nothing of ours but `durable_teams.workflows`: start a
conversation, send a turn by the update, read its status and transcript by queries, close it by
the signal and get its result. The names a user imports are the package's documented face
(docs/conversations.md), not the module files that a refactoring moves."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows import (
    ConversationInput,
    ConversationResult,
    ConversationStatus,
    Message,
    TeamWorkflow,
    TurnReply,
    UserTurn,
)

from .conftest import running_worker
from .teams import TEAM, echo

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a worker and a conversation: over a second


async def test_a_temporal_client_needs_only_the_workflows_package(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, single_turn=False),
            id=f"face-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        number = await handle.execute_update(TeamWorkflow.submit_turn, UserTurn(text="hello", turn_id="t1"))
        await handle.signal(TeamWorkflow.close)
        result = await handle.result()
        status = await handle.query(TeamWorkflow.status)
        (reply,) = await handle.query(TeamWorkflow.turn_replies, [number])
        transcript = await handle.query(TeamWorkflow.transcript)
    assert number == 1
    assert isinstance(result, ConversationResult) and result.answer == "heard: hello"
    assert isinstance(status, ConversationStatus) and status.turns == 1
    assert isinstance(reply, TurnReply) and (reply.turn, reply.text) == (1, "heard: hello")
    assert [(m.role, m.content) for m in transcript if isinstance(m, Message)] == [
        ("user", "hello"), ("assistant", "heard: hello")]
