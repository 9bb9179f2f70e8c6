"""The hard cases of forks (issue 38 item 6): a team of teams (a nested team is a child
workflow), an encrypted conversation, conversations recorded by the previous release
(tests/histories), and a conversation that continued as new; on the dev server with scripted
models that count their calls."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from collections import Counter
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowHistory

from durable_teams.client.checkpoints import run_checkpoints
from durable_teams.client.connection import connect
from durable_teams.client.replay_state import ReplayFailed, replay_history
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.time_travel import CheckpointError, fork, fork_input, list_checkpoints
from durable_teams.encryption.codec import EncryptionKeyError
from durable_teams.examples import acme, faang, faang_teams
from durable_teams.examples import support as support_example
from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .time_travel_team import REFUNDS, support, support_model
from .waiting import pending_question, until

pytestmark = pytest.mark.workflow

HISTORIES = Path(__file__).parent / "histories"


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()
    support_example.REFUNDS.clear()


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def replied(handle: WorkflowHandle, turn: int) -> ConversationStatus:
    async def check() -> ConversationStatus | None:
        status = await handle.query(TeamWorkflow.status)
        return status if status.last_reply and status.last_reply.turn >= turn else None
    return await until(check, f"turn {turn}'s reply")


def agents(model: ScriptedModel, since: int) -> Counter[str]:
    return Counter(request.agent for request, _, _ in model.requests[since:])


@pytest.mark.slow  # a team of teams: over a second under load
async def test_a_fork_inside_a_team_of_teams_turn_runs_only_the_nested_team_after_the_checkpoint(
        client: Client, task_queue: str) -> None:
    compiled = faang_teams.build().compile()
    model = ScriptedModel(faang_teams.SCRIPT)
    async with running_worker(client, task_queue, [compiled], model):
        handle = await start(client, task_queue, compiled)
        await send_turn(client, handle.id, faang.QUESTION)
        points = await list_checkpoints(client, handle.id)
        # the top supervisor's second reply hands over to the math team, the research team done
        to_math = [p for p in points if p.kind == "model"][1]
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=to_math.id)
        status = await replied(client.get_workflow_handle(forked.workflow_id), 1)
        math_child = f"{forked.workflow_id}/math_team-2"
        child_status = await client.get_workflow_handle(math_child).query(TeamWorkflow.status)
        inside_child = [p for p in await list_checkpoints(client, f"{handle.id}/math_team-2") if p.kind == "tool"][0]
        with pytest.raises(CheckpointError) as refused:
            await fork(client, handle.id, at=inside_child.id)
    assert status.last_reply is not None and status.last_reply.text == faang.ANSWER
    # the research team's answer is inherited (no call of it or its expert), the math team runs
    # again as the fork's own child, the top supervisor makes only its final reply
    assert agents(model, calls) == {"math_team": 2, "math_expert": 5, "top_supervisor": 1}
    assert child_status.turns == 1 and child_status.forked_from is None
    assert str(refused.value) == (
        f"{inside_child.id!r} is a checkpoint of the nested team running as {handle.id}/math_team-2, "
        f"not of thread {handle.id}: fork the thread at {to_math.id} ({to_math.description}), before "
        f"that team started (its fork runs the team again), or fork the team's own conversation "
        f"on its own: durable-teams fork {handle.id}/math_team-2 --at {inside_child.id}")


@pytest.mark.slow  # connects clients of its own
async def test_an_encrypted_conversation_forks_with_the_key_and_its_fork_stays_encrypted(
        client: Client, task_queue: str) -> None:
    address = client.service_client.config.target_host
    keyed = await connect(address, encryption=f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(keyed, task_queue, [team], model):
        handle = await start(keyed, task_queue, team)
        await send_turn(keyed, handle.id, "refund OCELOT-7731")
        points = await list_checkpoints(keyed, handle.id)
        result = next(p for p in points if p.kind == "tool")
        inside = await fork(keyed, handle.id, at=result.id)
        inside_status = await replied(keyed.get_workflow_handle(inside.workflow_id), 1)
        edited = await fork(keyed, handle.id, message="refund IBEX-4410")
        edited_status = await replied(keyed.get_workflow_handle(edited.workflow_id), 2)
        with pytest.raises(EncryptionKeyError):  # no key: refused in the codec's words
            await fork(await connect(address), handle.id, at=result.id)
        raw = [await client.get_workflow_handle(f.workflow_id).fetch_history() for f in (inside, edited)]
    assert result.description == "tool result (execute_refund)"  # its summary read with the key
    assert inside_status.last_reply is not None and inside_status.last_reply.text == "done: refunded OCELOT-7731"
    assert edited_status.last_reply is not None and edited_status.last_reply.text == "done: refunded IBEX-4410"
    assert REFUNDS == {"OCELOT-7731": 1, "IBEX-4410": 1}
    for history in raw:  # the forks' state (the carried transcript) and steps: ciphertext only
        text = history.to_json()
        assert "OCELOT" not in text and "IBEX" not in text and "refunded" not in text


async def test_a_conversation_of_the_previous_release_forks_inside_a_turn(client: Client, task_queue: str) -> None:
    """0.1.0's acme history: turn 3 looked the boots up, then the refund waited for approval."""
    history = WorkflowHistory.from_json("acme_conversation", (HISTORIES / "acme_conversation.json").read_text())
    points, _ = await run_checkpoints(client, history)
    looked_up = next(p for p in points if p.kind == "tool")
    compiled = acme.build().compile()
    model = ScriptedModel(acme.SCRIPT)
    async with running_worker(client, task_queue, [compiled], model):
        inp = await fork_input(client, history.workflow_id, [history], points, looked_up.id)
        handle = await client.start_workflow(TeamWorkflow.run, inp, id=f"acme-fork-{uuid.uuid4().hex[:8]}",
                                             task_queue=task_queue)
        asked = await pending_question(handle)
        await send_reply(client, handle.id, asked.question_id, approved=True)
        status = await replied(handle, 3)
        log = await handle.query(TeamWorkflow.transcript)
    assert looked_up.description == "tool result (look_up_item)"
    assert (asked.kind, asked.tool) == ("approval", "execute_refund")
    assert agents(model, 0) == {"repairs": 2}  # the refund call and the answer after it
    assert status.last_reply is not None and status.last_reply.text == "Done: your boots are refunded."
    assert support_example.REFUNDS == [("item_132612938", "fell apart after a week")]
    assert [m.content for m in log if m.role == "user"] == [
        "I keep failing to catch a roadrunner. Want to buy something.", "How much is it?",
        "My boots fell apart, refund them."]  # the recorded turns, inherited


async def test_a_fork_of_the_previous_release_after_an_answer_does_not_ask_again(
        client: Client, task_queue: str) -> None:
    """0.1.0's support history: the customer answered triage's question with the order number."""
    name = "support_waiting_approval"
    history = WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())
    points, _ = await run_checkpoints(client, history)
    answer = next(p for p in points if p.kind == "answer")
    compiled = support_example.build().compile()
    model = ScriptedModel(support_example.SCRIPT)
    async with running_worker(client, task_queue, [compiled], model):
        inp = await fork_input(client, name, [history], points, answer.id)
        handle = await client.start_workflow(TeamWorkflow.run, inp, id=f"support-fork-{uuid.uuid4().hex[:8]}",
                                             task_queue=task_queue)
        asked = await pending_question(handle)
        log = await handle.query(TeamWorkflow.transcript)
        await handle.terminate("test over")
    assert (asked.kind, asked.tool) == ("approval", "execute_refund")  # not the order number again
    assert [m.content for m in log if m.role == "tool" and m.name == "ask_human"] == ["Order 4711"]
    assert agents(model, 0) == {"triage_agent": 1, "issues_and_repairs": 2}


async def test_a_fork_while_a_turns_model_call_runs_makes_that_call_itself(client: Client, task_queue: str) -> None:
    """Forked at its latest checkpoint while the model call after it is under way: the fork
    makes the call (it is after the checkpoint); the original's call finishes on its own."""
    gate = asyncio.Event()
    seen = asyncio.Event()

    def held(req, messages, tools):  # noqa: ANN001, ANN202 - the scripted model's signature
        return support_model(req, messages, tools)

    model = ScriptedModel(held)
    original = model.complete

    async def complete(req, messages, tools):  # noqa: ANN001, ANN202
        if req.agent_call_index == 1 and req.workflow_id.startswith("thread-") and "-fork-" not in req.workflow_id:
            seen.set()
            await gate.wait()
        return await original(req, messages, tools)

    model.complete = complete  # type: ignore[method-assign]
    team = support()
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        await seen.wait()  # the reply after the refund's result is being made
        forked = await fork(client, handle.id, at=(await list_checkpoints(client, handle.id))[-1].id)
        status = await replied(client.get_workflow_handle(forked.workflow_id), 1)
        gate.set()
        reply = await turn
    assert status.last_reply is not None and status.last_reply.text == "done: refunded A1"
    assert reply.text == "done: refunded A1" and REFUNDS == {"A1": 1}


@pytest.mark.parametrize("taken", [1, 2, 3], ids=["started", "task_scheduled", "task_started"])
async def test_a_run_that_has_not_taken_its_first_step_lists_nothing_and_never_hangs(
        client: Client, taken: int) -> None:
    """The current run right after a continue-as-new (or a fork just started) can be read
    before its first workflow task completed: the Replayer would wait for that task for ever
    (the hang of a fork inside a turn of an earlier run, listed right after the run changed)."""
    whole = WorkflowHistory.from_json("forked_conversation", (HISTORIES / "forked_conversation.json").read_text())
    begun = WorkflowHistory(whole.workflow_id, whole.events[:taken])
    points, forked_from = await asyncio.wait_for(run_checkpoints(client, begun), 10)
    listed, expected = await run_checkpoints(client, whole)
    assert (points, forked_from) == ([], expected) and expected is not None and listed
    with pytest.raises(ReplayFailed, match="has not taken its first step yet"):
        await asyncio.wait_for(replay_history(client, begun), 10)
