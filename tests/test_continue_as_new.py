"""Long conversations continue as new (a low threshold here) without clients noticing: the
transcript, the active agent and a question waiting for a person cross the boundary, and every
`send_turn` returns its own reply."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import Client, WorkflowHandle

from durable_teams.client.send import send_turn
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, HumanReply, UserTurn

from .conftest import running_worker
from .teams import script, team_with_threshold
from .waiting import pending_question

pytestmark = pytest.mark.workflow


async def current_run(handle: WorkflowHandle) -> str:
    return (await handle.describe()).run_id or ""


@pytest.mark.slow  # fifty turns across several runs
async def test_fifty_turns_cross_several_runs(client: Client, task_queue: str) -> None:
    team = team_with_threshold(100)
    model = ScriptedModel(script)
    texts = ["I want to buy"] + [f"turn {i}" for i in range(2, 25)]
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"long-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        replies = [await send_turn(client, handle.id, text) for text in texts]

        # Turn 25 waits for a person. Turns sent meanwhile queue up and grow the history until
        # it passes the threshold, and the run continues as new while the question is pending.
        latest = client.get_workflow_handle_for(TeamWorkflow.run, handle.id)  # no run id: current run
        asking = asyncio.ensure_future(send_turn(client, handle.id, "need help"))
        question = await pending_question(latest)
        run_with_question = await current_run(latest)
        queued_texts: list[str] = []
        for n in range(26, 76):
            text, queued_texts = f"turn {n}", queued_texts + [f"turn {n}"]
            await latest.execute_update(TeamWorkflow.submit_turn, UserTurn(text=text, turn_id=f"id-{n}"))
            if await current_run(latest) != run_with_question:
                break
        assert await current_run(latest) != run_with_question, "never continued as new"
        carried = await pending_question(latest)
        assert carried == question  # the same question, not asked again
        await latest.execute_update(
            TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="order 4711"))
        asked_reply = await asking
        # Each queued turn went with the state into the new run; sending it again by id returns
        # its reply there without running the turn twice.
        queued_replies = await asyncio.gather(*(
            send_turn(client, handle.id, t, turn_id=f"id-{t.split()[1]}") for t in queued_texts))
        first_after = 26 + len(queued_texts)

        # at least 17 more, and 50 turns in all (how many queued depends on events per run)
        more = max(17, 51 - first_after)
        rest = [f"turn {i}" for i in range(first_after, first_after + more)]
        replies += [await send_turn(client, handle.id, text) for text in rest]
        transcript = await latest.query(TeamWorkflow.transcript)
        status = await latest.query(TeamWorkflow.status)
        await latest.signal(TeamWorkflow.close)
        result = await latest.result()

    assert replies[0].text == "sales: I want to buy"
    assert [r.text for r in replies[1:]] == [f"sales: {t}" for t in texts[1:] + rest]
    assert (asked_reply.turn, asked_reply.text) == (25, "sales got: order 4711")
    assert [(r.turn, r.text) for r in queued_replies] == [
        (n, f"sales: {t}") for n, t in zip(range(26, first_after), queued_texts, strict=True)]
    assert result.turns == first_after + more - 1 >= 50 and result.runs >= 3, result
    assert status.active_agent == "sales"
    users = [m.content for m in transcript if m.role == "user"]
    assert users == texts + ["need help"] + queued_texts + rest  # complete and in order
    asks = [c for m in transcript for c in m.tool_calls if c.name == "ask_human"]
    assert len(asks) == 1 and question.question_id == "q1"
    assert sum(1 for r in model.requests if r[0].agent == "triage") == 1
