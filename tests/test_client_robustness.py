"""Clients never lose or silently drop a turn: `send_turn` waits while the server refuses
updates for too many in flight, and says in a typed error when a conversation cannot answer."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import Client, WorkflowHandle

from durable_teams.client.refusals import ConversationEnded, ConversationNotFound
from durable_teams.client.send import send_turn
from durable_teams.client.start import start_conversation
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import TEAM, GatedModel, echo
from .waiting import until

pytestmark = pytest.mark.workflow


async def start(client: Client, task_queue: str) -> WorkflowHandle:
    """As our clients start a conversation: labelled (Team set), so it asks the worker nothing
    at its start (a raw start asks with the `available_labels` activity)."""
    return await start_conversation(
        client, TEAM.spec.name, ConversationInput(team=TEAM.spec, single_turn=False),
        id=f"rob-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


@pytest.mark.slow  # a hundred turns at once
async def test_hundred_concurrent_turns_are_all_answered_in_order(client: Client, task_queue: str) -> None:
    """All 100 turns are accepted at once (each `submit_turn` update completes as it is
    accepted, so Temporal's 10 updates in flight are never reached), queue in the workflow
    while the model holds the first, and every caller gets the reply to its own turn."""
    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await start(client, task_queue)
        texts = [f"message {i}" for i in range(100)]
        sending = [asyncio.ensure_future(send_turn(client, handle.id, t)) for t in texts]

        async def all_queued() -> bool:  # the model holds turn 1: nothing is answered
            return (await handle.query(TeamWorkflow.status)).queued_turns == 100

        await until(all_queued, "100 turns queued")
        model.gate.set()
        replies = await asyncio.wait_for(asyncio.gather(*sending), timeout=240)
        transcript = await handle.query(TeamWorkflow.transcript)
    for text, reply in zip(texts, replies, strict=True):
        assert (reply.text, reply.status) == (f"heard: {text}", "completed")
    assert sorted(r.turn for r in replies) == list(range(1, 101))
    assert len(transcript) == 200
    by_turn = sorted(replies, key=lambda r: r.turn)
    for n, reply in enumerate(by_turn):  # each turn's reply right after it, in turn order
        user, answer = transcript[2 * n], transcript[2 * n + 1]
        assert (user.role, answer.content) == ("user", reply.text)
        assert answer.content == f"heard: {user.content}"


async def _completed(client: Client, handle: WorkflowHandle) -> None:
    await send_turn(client, handle.id, "hello")
    await handle.signal(TeamWorkflow.close)
    await handle.result()


async def _terminated(client: Client, handle: WorkflowHandle) -> None:
    await handle.terminate("by a test")


async def _cancelled(client: Client, handle: WorkflowHandle) -> None:
    await handle.cancel()
    await until(lambda: _not_running(handle), "cancelled")


async def _not_running(handle: WorkflowHandle) -> bool:
    return (await handle.describe()).status.name != "RUNNING"  # type: ignore[union-attr]


ENDINGS = {"completed": (_completed, "COMPLETED"), "terminated": (_terminated, "TERMINATED"),
           "cancelled": (_cancelled, "CANCELED")}


@pytest.mark.parametrize("ending", list(ENDINGS))
async def test_send_turn_to_an_ended_conversation_raises_conversation_ended(
    client: Client, task_queue: str, ending: str
) -> None:
    end, state = ENDINGS[ending]
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await start(client, task_queue)
        await end(client, handle)
        with pytest.raises(ConversationEnded) as caught:
            await asyncio.wait_for(send_turn(client, handle.id, "anyone?"), timeout=30)
    assert type(caught.value) is ConversationEnded
    assert str(caught.value) == f"conversation {handle.id} ended ({state}) before answering this turn"


async def test_send_turn_to_a_failed_conversation_raises_conversation_ended(
    client: Client, task_queue: str
) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await client.start_workflow("TeamWorkflow", {"team_name": "echo", "taks": "x"},
                                             id=f"rob-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await until(lambda: _not_running(handle), "failed")
        with pytest.raises(ConversationEnded) as caught:
            await send_turn(client, handle.id, "anyone?")
    assert str(caught.value).startswith(  # and why: the workflow's own reason (issue 47)
        f"conversation {handle.id} ended (FAILED) before answering this turn: workflow input: taks: "
        "unknown field (did you mean 'task'?)")


async def test_send_turn_to_a_closing_conversation_raises_conversation_ended(
    client: Client, task_queue: str
) -> None:
    """Closed but still answering its queued turn: new turns are refused, as ended."""
    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await start(client, task_queue)
        first = asyncio.ensure_future(send_turn(client, handle.id, "first"))
        await until(lambda: _queued(handle), "the first turn queued")
        await handle.signal(TeamWorkflow.close)
        with pytest.raises(ConversationEnded) as caught:
            await send_turn(client, handle.id, "second")
        model.gate.set()
        reply = await first
        result = await handle.result()
    assert str(caught.value) == f"conversation {handle.id} is closed: the conversation is closed"
    assert (reply.text, result.answer, result.turns) == ("heard: first", "heard: first", 1)


async def _queued(handle: WorkflowHandle) -> bool:
    return (await handle.query(TeamWorkflow.status)).queued_turns == 1


async def test_send_turn_to_no_such_conversation_raises_conversation_not_found(client: Client) -> None:
    missing = f"never-started-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ConversationNotFound) as caught:
        await send_turn(client, missing, "hello?")
    assert str(caught.value) == f"no conversation with id {missing}"
    assert isinstance(caught.value, ConversationEnded)  # one except clause catches both
