"""Forks at a checkpoint inside a turn (durable_teams/client/fork_state.py): the fork continues
that turn where it stood; no model call or tool call of the prefix runs again. On the dev
server with the counting scripted model and the counting refund tool of the time travel tests."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .time_travel_team import REFUNDS, execute_refund, support, support_model
from .waiting import pending_question, until

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def shared(handle: WorkflowHandle) -> list[str]:
    log = await handle.query(TeamWorkflow.transcript)
    return [m.content or "" for m in log if m.role in ("user", "assistant") and m.content]


async def replied(handle: WorkflowHandle, turn: int) -> ConversationStatus:
    """The status once turn `turn` has its reply (the fork answers its resumed turn itself)."""
    async def check() -> ConversationStatus | None:
        status = await handle.query(TeamWorkflow.status)
        return status if status.last_reply and status.last_reply.turn >= turn else None
    return await until(check, f"turn {turn}'s reply")


async def test_a_fork_after_the_refunds_result_runs_neither_the_refund_nor_a_model_call_before_it(
        client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello"):
            await send_turn(client, handle.id, text)
        points = await list_checkpoints(client, handle.id)
        result = next(p for p in points if p.kind == "tool")
        before = len((await handle.fetch_history()).events)
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=result.id)
        fork_handle = client.get_workflow_handle(forked.workflow_id)
        status = await replied(fork_handle, 1)
        fork_calls = model.requests[calls:]
        fork_points = await list_checkpoints(client, forked.workflow_id)
        nothing_more = await send_turn(client, forked.workflow_id, "thanks")
        fork_log = await shared(fork_handle)
        after = len((await handle.fetch_history()).events)
        history = await fork_handle.fetch_history()
    assert REFUNDS == {"A1": 1}  # paid once, in the original; the fork inherits its result
    # one model call: the one after the tool result, on the transcript with that result
    assert len(fork_calls) == 1 and fork_calls[0][0].agent_call_index == 1
    assert fork_calls[0][1][-1] == {"role": "tool", "content": "refunded A1", "tool_call_id": "call_support_0_0"}
    assert status.last_reply is not None and status.last_reply.text == "done: refunded A1"
    assert (status.last_reply.turn, status.turns, status.forked_from) == (1, 1, f"{handle.id}@{result.id}")
    assert fork_log == ["refund A1", "done: refunded A1", "thanks", "support heard: thanks"]
    assert (nothing_more.turn, status.model_calls) == (2, 2)  # counted once: the prefix's and its own
    assert after == before  # the original is untouched
    # its checkpoints: the prefix up to the tool result, then its own (no turn taken twice)
    assert [p.id for p in fork_points[:3]] == [p.id for p in points[:3]]
    assert [p.kind for p in fork_points[3:]] == ["model", "turn_end"]
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=client.data_converter)
    assert (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None


async def test_a_fork_after_a_model_reply_runs_the_calls_it_made_and_nothing_before(
        client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "refund A1")
        points = await list_checkpoints(client, handle.id)
        reply = next(p for p in points if p.kind == "model")  # the call to execute_refund
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=reply.id)
        status = await replied(client.get_workflow_handle(forked.workflow_id), 1)
    # the refund came after the checkpoint: the fork's branch pays it, as the original did
    assert REFUNDS == {"A1": 2}
    assert len(model.requests) - calls == 1  # the reply after the tool's result only
    assert status.last_reply is not None and status.last_reply.text == "done: refunded A1"


async def test_a_fork_after_an_answer_goes_on_as_the_original_did_without_asking_again(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        asked = await pending_question(handle)
        await send_reply(client, handle.id, asked.question_id, approved=True, arguments='{"order": "A2"}')
        await turn
        answer = next(p for p in await list_checkpoints(client, handle.id) if p.kind == "answer")
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=answer.id)
        fork_handle = client.get_workflow_handle(forked.workflow_id)
        status = await replied(fork_handle, 1)
    assert status.pending == [] and status.last_reply is not None
    assert status.last_reply.text == 'done: (The user changed the arguments to {"order": "A2"} before it ran.) refunded A2'
    assert REFUNDS == {"A2": 2}  # the answer's tool ran after the answer, in each branch
    assert len(model.requests) - calls == 1


async def test_a_message_for_a_fork_inside_a_turn_is_refused_naming_the_turns_start(
        client: Client, task_queue: str) -> None:
    team = support()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "refund A1")
        points = await list_checkpoints(client, handle.id)
        with pytest.raises(CheckpointError, match=rf"continues that turn, so it takes no --message; "
                                                  rf"to edit the turn's message fork at its start \({points[0].id}\)"):
            await fork(client, handle.id, at=points[2].id, message="refund B2")
    assert REFUNDS == {"A1": 1}


@pytest.mark.slow  # three turns over two runs and a fork: over two seconds
async def test_a_fork_inside_a_turn_of_an_earlier_run_continues_that_turn(
        client: Client, task_queue: str) -> None:
    team = support()
    team.spec.continue_as_new_after_events = 20  # passed by the end of the first turn
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello", "thanks"):
            await send_turn(client, handle.id, text)
        points = await list_checkpoints(client, handle.id)
        result = next(p for p in points if p.kind == "tool")
        current = (await handle.describe()).run_id
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=result.id)
        fork_handle = client.get_workflow_handle(forked.workflow_id)
        status = await replied(fork_handle, 1)
        fork_calls = len(model.requests) - calls
        nothing_more = await send_turn(client, forked.workflow_id, "bye")
        fork_log = await shared(fork_handle)
    assert result.run_id == points[0].run_id != current  # turn 1's refund: in the first run
    assert REFUNDS == {"A1": 1} and fork_calls == 1  # the reply after the result, nothing before
    assert status.last_reply is not None and status.last_reply.text == "done: refunded A1"
    assert fork_log == ["refund A1", "done: refunded A1", "bye", "support heard: bye"]
    assert nothing_more.turn == 2
