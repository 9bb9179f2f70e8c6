"""A raw `send_message` caller on a team with local model calls: while its update waits for the
reply, the turn's model calls are regular activities. Left waiting while local activities
resolved, many such updates stall the conversation (its workflow tasks are lost until one
times out, 30 s each time)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.worker import Replayer

from durable_teams.client.refusals import transient_reason
from durable_teams.client.send import submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest, ModelResponse
from durable_teams.workflows.options import ModelCalls
from durable_teams.workflows.state import ConversationInput, TurnReply, UserTurn

from .conftest import running_worker
from .inspect_history import event_kinds
from .teams import LOCAL_MARKER, GatedModel

pytestmark = pytest.mark.workflow

LOCAL_ECHO = Swarm([Agent("echo", "Repeat what you hear.")], name="echo",
                   model_calls=ModelCalls(local=True)).compile()


class SlowEcho(GatedModel):
    """The echo model, each call 30 ms (the latency at which the stall showed every run)."""

    async def complete(self, req: ModelRequest, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]]) -> ModelResponse:
        await asyncio.sleep(0.03)
        return await super().complete(req, messages, tools)


async def send_raw(handle: WorkflowHandle, n: int) -> TurnReply:
    """The raw update, sent again while Temporal refuses it (10 already in flight) or aborts it
    (a workflow task lost under load), as
    any caller must; the turn id makes a re-send the same turn."""
    while True:
        try:
            return await handle.execute_update(TeamWorkflow.send_message, UserTurn(text=f"m{n}", turn_id=f"t{n}"))
        except RPCError as err:
            if transient_reason(err) is None:
                raise
        await asyncio.sleep(0.05)


@pytest.mark.slow  # a hundred turns at once
async def test_hundred_raw_send_message_turns_on_local_calls_are_each_answered(
        client: Client, task_queue: str) -> None:
    model = SlowEcho()
    model.gate.set()
    async with running_worker(client, task_queue, [LOCAL_ECHO], model):
        handle = await start_conversation(
            client, LOCAL_ECHO.spec.name, ConversationInput(team=LOCAL_ECHO.spec, single_turn=False),
            id=f"raw-local-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        replies = await asyncio.wait_for(asyncio.gather(*(send_raw(handle, n) for n in range(100))), 120)
        waited = await event_kinds(handle)
        accepted = await submit_turn(client, handle.id, "nobody waits on this one", turn_id="last")
        last = await asyncio.wait_for(accepted.reply(), 60)
        after = await event_kinds(handle)
        history = await handle.fetch_history()
    assert sorted(r.turn for r in replies) == list(range(1, 101))
    assert {r.text for r in replies} == {f"heard: m{n}" for n in range(100)}  # each caller its own reply
    assert (waited["call_model"], waited[LOCAL_MARKER]) == (100, 0)  # regular while one waited
    assert last.turn == 101
    assert (after["call_model"], after[LOCAL_MARKER]) == (100, 1)  # local again once none waits
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, str(result.replay_failure)
