"""A turn's outcome in one call (`turn_outcome`, durable_teams/client/turn_outcome.py): the
reply, a question the waiter has not seen, and the earlier way (the history watch) whenever
the update cannot tell: a second waiter of the same process, an unknown turn, a run that
continued as new."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from durable_teams.client.send import send_reply, send_turn, submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import TurnOutcome
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import ASKED, DESK, FIRST, TEAM, GatedModel, desk_script, echo, team_with_threshold
from .waiting import until

pytestmark = pytest.mark.workflow


@workflow.defn(name="TeamWorkflow", sandboxed=False)
class EarlierRelease:
    """A conversation's workflow as a worker of an earlier release runs it: no `turn_outcome`."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def start(client: Client, task_queue: str, team: str) -> str:
    wid = f"{team}-{uuid.uuid4().hex[:8]}"
    await start_conversation(client, team, ConversationInput(team_name=team, single_turn=False),
                             id=wid, task_queue=task_queue)
    return wid


async def outcome_updates(client: Client, wid: str) -> list[str]:
    """The `turn_outcome` updates the conversation's history recorded as completed, by result."""
    history = await client.get_workflow_handle(wid).fetch_history()
    accepted = {e.event_id: e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
                for e in history.events
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED}
    return [accepted[e.workflow_execution_update_completed_event_attributes.accepted_event_id]
            for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
            and accepted[e.workflow_execution_update_completed_event_attributes.accepted_event_id] == "turn_outcome"]


async def test_send_turn_waits_for_the_reply_with_one_update(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        wid = await start(client, task_queue, "echo")
        reply = await send_turn(client, wid, "hello")
        again = await wait_outcome(client, wid, 1)  # answered already: at once
        asked = await wait_outcome(client, wid, 1, seen=[])
        updates = await outcome_updates(client, wid)

    assert (reply.turn, reply.text) == (1, "heard: hello")
    assert again.reply == asked.reply == reply and again.question is None
    assert updates == ["turn_outcome", "turn_outcome"]  # a wait for the reply again is the same update (its id)


async def test_a_question_not_seen_is_an_outcome_and_one_seen_is_not(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        wid = await start(client, task_queue, "desk")
        accepted = await submit_turn(client, wid, FIRST)
        asked = await wait_outcome(client, wid, accepted.number, seen=[])
        assert asked.question is not None and asked.reply is None
        waiting = asyncio.ensure_future(wait_outcome(client, wid, accepted.number, seen=[asked.question.question_id]))
        await asyncio.sleep(0.5)  # a question already seen: still waiting (nothing to await but time)
        assert not waiting.done()
        await send_reply(client, wid, asked.question.question_id, text="4711")
        approval = await waiting

    assert f"[desk] {asked.question.text}" == ASKED
    assert approval.question is not None and approval.question.kind == "approval"
    assert approval.turn == accepted.number == 1


async def test_an_unknown_turn_and_a_second_waiter_of_one_process_wait_the_earlier_way(
        client: Client, task_queue: str) -> None:
    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model):
        wid = await start(client, task_queue, "echo")
        with pytest.raises(OutcomeUnavailable, match="no turn 7"):
            await wait_outcome(client, wid, 7)
        first = await submit_turn(client, wid, "one")
        second = await submit_turn(client, wid, "two")
        by_update = asyncio.ensure_future(first.reply())
        await asyncio.sleep(0.3)  # the first waiter's update in flight (nothing else to await)
        with pytest.raises(OutcomeUnavailable, match="already waits"):
            await wait_outcome(client, wid, second.number)
        watched = asyncio.ensure_future(second.reply())  # the history watch, the earlier way
        model.gate.set()
        replies = await asyncio.gather(by_update, watched)

    assert [(r.turn, r.text) for r in replies] == [(1, "heard: one"), (2, "heard: two")]


@pytest.mark.slow  # over 3 s under load
async def test_replies_of_turns_whose_run_continues_as_new_right_after_them(client: Client, task_queue: str) -> None:
    """(A run that continues as new while the turn waits for a person abandons the update:
    tests/test_continue_as_new.py's turn 25 is answered through the history watch then.)"""
    team = team_with_threshold(1)  # every turn ends its run
    async with running_worker(client, task_queue, [team], ScriptedModel(echo)):
        wid = await start(client, task_queue, "long")
        first = await send_turn(client, wid, "one")
        second = await send_turn(client, wid, "two")
        turns = (await client.get_workflow_handle(wid).query(TeamWorkflow.status)).turns

    assert [(first.turn, first.text), (second.turn, second.text)] == [(1, "heard: one"), (2, "heard: two")]
    assert turns == 2


async def test_a_worker_without_the_update_refuses_it_and_the_caller_waits_the_earlier_way(
        client: Client, task_queue: str) -> None:
    async with Worker(client, task_queue=task_queue, workflows=[EarlierRelease]):
        handle = await client.start_workflow("TeamWorkflow", id=f"old-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        try:
            with pytest.raises(OutcomeUnavailable, match="turn_outcome"):
                await wait_outcome(client, handle.id, 1)
        finally:
            await handle.terminate()


async def test_a_wait_its_caller_left_is_counted_until_the_turn_ends_and_is_shared_by_id(
        client: Client, task_queue: str) -> None:
    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model):
        wid = await start(client, task_queue, "echo")
        accepted = await submit_turn(client, wid, "one")
        left = asyncio.ensure_future(wait_outcome(client, wid, accepted.number))
        await asyncio.sleep(0.5)  # its update in flight (nothing else to await)
        left.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await left
        with pytest.raises(OutcomeUnavailable, match="already waits"):  # the left wait still counts
            await wait_outcome(client, wid, accepted.number)
        model.gate.set()
        reply = await accepted.reply()  # the history watch: this process's one wait is the left one

        async def waited_again() -> TurnOutcome | None:  # once the left wait ended with the turn
            try:
                return await wait_outcome(client, wid, accepted.number)
            except OutcomeUnavailable:
                return None
        again = await until(waited_again, "the left wait counted out once the turn ended")
        updates = await outcome_updates(client, wid)

    assert again.reply is not None and (reply.text, again.reply.text) == ("heard: one", "heard: one")
    assert updates == ["turn_outcome"]  # the left wait and the later one: one update, by its id
