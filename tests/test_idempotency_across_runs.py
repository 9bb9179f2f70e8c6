"""An idempotency key holds to one input across continue-as-new. Temporal runs one update of an
id per workflow run: an input under a key (its update `keyed:<key>`) whose twin was taken in an
earlier run reaches the next run as a new update, so the conversation itself refuses another
input under a key it took (durable_teams/workflows/intake.py, `_key_used`), and takes the same
input again as the turn it was. (The gateway asks `inputs_taken` before sending; a twin sent at
the same moment asked before the first was taken: this is what keeps it to one run.)"""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams.client.refusals import TurnConflict
from durable_teams.client.send import send_answer, submit_turn
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import script, team_with_threshold
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # several runs, by design


async def test_a_key_taken_in_an_earlier_run_refuses_other_inputs_and_repeats_its_own(
        client: Client, task_queue: str) -> None:
    team = team_with_threshold(1)  # every turn ends its run
    key = f"k-{uuid.uuid4().hex[:12]}"
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"long-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first = await submit_turn(client, handle.id, "one", turn_id=f"{key}.a", update_key=key)
        await first.reply()
        moved_on = (await handle.describe()).run_id != first.run_id  # the turn ended its run
        with pytest.raises(TurnConflict, match="idempotency key"):  # the twin, in the next run
            await submit_turn(client, handle.id, "two", turn_id=f"{key}.b", update_key=key)
        again = await submit_turn(client, handle.id, "one", turn_id=f"{key}.a", update_key=key)
        await submit_turn(client, handle.id, "need help")  # a question waits for a person
        question = await pending_question(handle)
        with pytest.raises(TurnConflict, match="idempotency key"):  # an answer under the key, too
            await send_answer(client, handle.id, question.question_id, {"text": "order 7", "input_id": f"{key}.c"},
                              update_key=key)
        status = await handle.query(TeamWorkflow.status)

    assert moved_on
    assert (first.number, again.number) == (1, 1)  # the retry is the turn it was
    assert status.turns == 2 and [q.question_id for q in status.pending] == [question.question_id]
