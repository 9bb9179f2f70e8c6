"""Time travel across runs and races: a rewind to a checkpoint from before a continue-as-new, a
fork inside a turn of such an earlier run, and a turn or an answer that waits while a rewind
takes the thread back before it (told, never answered with another turn's reply). On the dev
server with the counting scripted model and the counting refund tool of the time travel tests."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.worker import Replayer

from durable_teams.client.checkpoints import run_chain, run_checkpoints
from durable_teams.client.refusals import QuestionClosed, TurnAbandoned
from durable_teams.client.replay_state import NotStarted, replay_history
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.time_travel import fork, list_checkpoints, rewind
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .time_travel_team import (
    REFUNDS,
    execute_refund,
    said,
    send_turns,
    start,
    support,
    support_model,
    support_over_runs,
)
from .waiting import pending_question, until

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


@pytest.mark.slow  # conversations of several runs
async def test_a_rewind_to_a_turn_end_of_an_earlier_run_goes_on_from_there_and_keeps_every_run(
        client: Client, task_queue: str) -> None:
    team, model = support_over_runs(), ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        await send_turns(client, handle.id, "refund A1", "hello", "thanks")
        before = await list_checkpoints(client, handle.id)
        end_of_1 = next(p for p in before if p.kind == "turn_end")
        old_runs = [run_id for run_id, _ in await run_chain(client, handle.id)]
        old_run = old_runs[-1]
        calls = len(model.requests)
        new_run = await rewind(client, handle.id, to=end_of_1.id)
        reply = await send_turn(client, handle.id, "refund B2")
        log = await said(client, handle.id)
        after = await list_checkpoints(client, handle.id)
        abandoned_status = (await client.get_workflow_handle(handle.id, run_id=old_run).describe()).status
        abandoned_points = [point for run_id in old_runs for point in (await run_checkpoints(
            client, await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()))[0]]
        history = await handle.fetch_history()
    assert end_of_1.run_id != before[-1].run_id  # the checkpoint is in an earlier run
    assert new_run not in (old_run, end_of_1.run_id)  # a new run (which may continue as new again)
    assert (reply.turn, reply.text) == (2, "done: refunded B2")
    assert log == ["refund A1", "done: refunded A1", "refund B2", "done: refunded B2"]
    assert REFUNDS == {"A1": 1, "B2": 1}  # nothing of the prefix or the abandoned branch ran again
    assert len(model.requests) - calls == 2  # the new turn's call and answer, nothing else
    assert abandoned_status == WorkflowExecutionStatus.TERMINATED  # ended by the reset, readable
    assert [p.turn for p in abandoned_points if p.kind == "turn_end"] == [1, 2, 3]  # every run still read
    # the prefix keeps its ids (the turn end rewound to is re-run by the reset: a new id), then
    # the rewound branch; nothing of the abandoned one
    assert [p.id for p in after[:4]] == [p.id for p in before[:4]]
    assert [(p.kind, p.turn) for p in after] == [
        ("turn", 1), ("model", None), ("tool", None), ("model", None), ("turn_end", 1),
        ("turn", 2), ("model", None), ("tool", None), ("model", None), ("turn_end", 2)]
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=client.data_converter)
    assert (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None


@pytest.mark.slow  # conversations of several runs
async def test_a_fork_inside_a_turn_of_an_earlier_run_continues_that_turn_only(
        client: Client, task_queue: str) -> None:
    team, model = support_over_runs(), ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        await send_turns(client, handle.id, "refund A1", "hello", "thanks")
        points = await list_checkpoints(client, handle.id)
        result = next(p for p in points if p.kind == "tool")
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=result.id)
        fork_handle = client.get_workflow_handle(forked.workflow_id)

        async def answered() -> bool:
            status = await fork_handle.query(TeamWorkflow.status)
            return status.last_reply is not None and status.last_reply.turn == 1
        await until(answered, "the fork's resumed turn answered")
        nothing_more = await send_turn(client, forked.workflow_id, "ok")
        fork_log = await said(client, forked.workflow_id)
    assert result.run_id != points[-1].run_id  # inside turn 1, in the first run
    assert REFUNDS == {"A1": 1}  # paid once, in the original
    assert len(model.requests) - calls == 2  # the answer after the tool result, and "ok"'s
    assert fork_log == ["refund A1", "done: refunded A1", "ok", "support heard: ok"]
    assert nothing_more.turn == 2


@pytest.mark.slow  # conversations of several runs
async def test_a_turn_waiting_when_a_rewind_goes_back_before_it_is_told_never_answered_with_another(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "hello")
        waiting = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        asked = await pending_question(handle)  # turn 2 waits at its breakpoint
        end_of_1 = next(p for p in await list_checkpoints(client, handle.id) if p.kind == "turn_end")
        await rewind(client, handle.id, to=end_of_1.id)
        with pytest.raises(TurnAbandoned) as abandoned:
            await waiting
        with pytest.raises(QuestionClosed):  # the abandoned branch's question is not asked any more
            await send_reply(client, handle.id, asked.question_id, approved=True)
        again = await send_turn(client, handle.id, "thanks")  # the new branch's turn 2
        log = await said(client, handle.id)
        pending = await handle.query(TeamWorkflow.pending_questions)
    assert str(abandoned.value) == (
        f"conversation {handle.id} was rewound to before turn 2 while it waited for its answer: "
        "the thread goes on without it; send it again")
    assert (again.turn, again.text) == (2, "support heard: thanks")
    assert log == ["hello", "support heard: hello", "thanks", "support heard: thanks"]
    assert pending == [] and REFUNDS == {}  # the refund never ran: its approval was abandoned


async def test_checkpoints_of_a_run_that_has_not_taken_its_first_step_are_none_and_nothing_hangs(
        client: Client) -> None:
    """A run read the moment it began (a continue-as-new a moment ago) has only its start in
    history, which the SDK's replayer never returns from: such a run lists no checkpoint."""
    handle = await start(client, "no-worker-polls-this", support())
    history = await handle.fetch_history()
    just_begun = WorkflowHistory(history.workflow_id, history.events[:1])
    points, forked_from = await asyncio.wait_for(run_checkpoints(client, just_begun), 30)
    with pytest.raises(NotStarted, match="has taken no step yet"):
        await replay_history(client, just_begun)
    await handle.terminate("test over")
    assert (points, forked_from) == ([], None)
