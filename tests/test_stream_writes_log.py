"""What a tool wrote with `get_stream_writer()` is kept, in order, on its message in the
conversation's log, and never shown to a model."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.client.send import send_turn
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .crunching import PROGRESS, SCRIPT, progress_team

pytestmark = pytest.mark.workflow


async def test_a_tools_writes_are_in_the_log_in_order_and_no_model_sees_them(client: Client, task_queue: str) -> None:
    team = progress_team()
    model = ScriptedModel(SCRIPT)
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        reply = await send_turn(client, handle.id, "crunch three")
        shared = await handle.query(TeamWorkflow.transcript)
        log = await handle.query(TeamWorkflow.transcript, True)
    assert reply.text == "All crunched."
    tool_messages = [m for m in log if m.role == "tool"]
    assert [(m.name, m.content, m.custom) for m in tool_messages] == [("crunch", "crunched 3", PROGRESS)]
    assert [m.custom for m in shared if m.custom] == [PROGRESS]  # what the LangGraph door reads
    assert len(model.requests) == 2
    seen: list[dict[str, Any]] = model.requests[1][1]
    assert {"role": "tool", "tool_call_id": tool_messages[0].tool_call_id, "content": "crunched 3"} in seen
    assert "progress" not in json.dumps(seen)  # the model is shown the result, never the writes
