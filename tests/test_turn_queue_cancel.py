"""The turn a conversation works on, once a queued turn was cancelled before it began: the
`status` query says which (`working_turn`), so every door's turn states (queued, working,
waiting) stay right. Counted from the queue's length they were not: the count took the queue
for the turns numbered last, so turn 3 read as working while turn 1 still ran."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams.client.send import submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.state import ConversationInput
from durable_teams.workflows.turn_states import answering, turn_state

from .conftest import running_worker
from .teams import TEAM, GatedModel
from .waiting import until

pytestmark = pytest.mark.workflow


def status_of(turns: int, queued: int, working: int | None) -> ConversationStatus:
    return ConversationStatus(active_agent=None, turns=turns, model_calls=0, pending=[],
                              queued_turns=queued, last_reply=None, closed=False, working_turn=working)


def test_the_turn_worked_on_is_the_workers_word_and_counted_only_without_it() -> None:
    assert answering(status_of(3, 2, 1)) == 1  # turn 2 cancelled in the queue: 1 runs, 3 waits
    assert answering(status_of(3, 2, None)) == 2  # an earlier release's worker: counted
    assert answering(status_of(3, 0, None)) == 3


async def test_a_turn_queued_behind_a_cancelled_one_reads_as_queued(client: Client, task_queue: str) -> None:
    model = GatedModel()  # holds turn 1's model call
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await start_conversation(
            client, TEAM.spec.name, ConversationInput(team=TEAM.spec, single_turn=False),
            id=f"queue-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first = await submit_turn(client, handle.id, "first")
        second = await submit_turn(client, handle.id, "second")
        third = await submit_turn(client, handle.id, "third")
        assert await handle.execute_update(TeamWorkflow.cancel_turn, second.number) == second.number

        async def cancelled() -> bool:
            return (await handle.query(TeamWorkflow.status)).queued_turns == 2

        await until(cancelled, "turn 2 out of the queue")
        status = await handle.query(TeamWorkflow.status)
        states = [turn_state(status, n, None, True).state for n in (1, 3)]
        model.gate.set()
        replies = [await first.reply(), await second.reply(), await third.reply()]
    assert (status.working_turn, answering(status)) == (1, 1)
    assert states == ["working", "queued"]
    assert [(r.turn, r.status) for r in replies] == [(1, "completed"), (2, "cancelled"), (3, "completed")]
    assert [r.text for r in replies[::2]] == ["heard: first", "heard: third"]
