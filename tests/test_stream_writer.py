"""A tool writes custom stream data with `get_stream_writer()` (LangGraph's name): refused
outside a tool run, refused when not JSON or too big; what a tool wrote is kept, in order, on its
message in the conversation's log, and never shown to a model."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams import get_stream_writer, tool
from durable_teams.client.send import send_turn
from durable_teams.teams import StreamWriteError
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.teams.stream_writer import MAX_STREAM_WRITE_BYTES, STREAM_WRITES, StreamWrites
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

PROGRESS = [{"progress": 50, "step": "half way"}, {"progress": 100, "step": "done"}]


@tool
def crunch(n: int) -> str:
    """Crunch n numbers, telling the stream how far it got."""
    writer = get_stream_writer()
    for item in PROGRESS:
        writer(item)
    return f"crunched {n}"


def progress_team() -> CompiledTeam:
    return Swarm([Agent("cruncher", "Crunch numbers.", tools=[crunch])], name="crunching").compile()


SCRIPT = {"cruncher": [call("crunch", n=3), say("All crunched.")]}


@pytest.mark.pure
def test_outside_a_tool_run_there_is_no_writer() -> None:
    with pytest.raises(RuntimeError, match=r"get_stream_writer\(\) is called outside a tool run"):
        get_stream_writer()


@pytest.mark.pure
def test_a_write_that_is_not_json_or_too_big_is_refused_and_not_kept() -> None:
    writes = StreamWrites("crunch")
    token = STREAM_WRITES.set(writes)
    try:
        writer = get_stream_writer()
        writer({"progress": 1})
        with pytest.raises(StreamWriteError, match="crunch wrote stream data JSON cannot encode"):
            writer({"when": object()})
        with pytest.raises(StreamWriteError, match="JSON cannot encode"):
            writer(float("nan"))
        with pytest.raises(StreamWriteError, match=f"over the {MAX_STREAM_WRITE_BYTES:,}-byte limit"):
            writer("x" * MAX_STREAM_WRITE_BYTES)
        writer(["ok", 2])
    finally:
        STREAM_WRITES.reset(token)
    assert writes.items == [{"progress": 1}, ["ok", 2]]
    with pytest.raises(RuntimeError, match="outside a tool run"):
        get_stream_writer()


@pytest.mark.workflow
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
