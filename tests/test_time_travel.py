"""Checkpoints, forks and rewinds of a conversation (durable_teams/client/time_travel.py), on
the dev server with a counting scripted model and a counting refund tool that is not idempotent."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from durable_teams.client.checkpoints import run_checkpoints
from durable_teams.client.replay_state import replay_history
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints, rewind
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.state import ConversationInput

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .time_travel_team import REFUNDS, execute_refund, support, support_model
from .waiting import pending_question

pytestmark = pytest.mark.workflow

HISTORIES = sorted(p for p in (Path(__file__).parent / "histories").glob("*.json")
                   if '"TeamWorkflow"' in p.read_text())
"""The recorded conversations tests/test_replay.py replays (0.1.0's and later ones; other
workflows' histories, an A2A push's, have no checkpoints)."""
WORKFLOW_IDS = {"nested_waiting_child": "nested_waiting/research_team-1",
                "nested_budget_stop_child": "nested_budget_stop/research_team-1"}


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def replays(client: Client, history: WorkflowHistory) -> bool:
    """True when `history` replays with this code (no nondeterminism)."""
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=client.data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
    return True


async def event_count(handle: WorkflowHandle) -> int:
    return len((await handle.fetch_history()).events)


async def shared(client: Client, workflow_id: str) -> list[str]:
    log = await client.get_workflow_handle(workflow_id).query(TeamWorkflow.transcript)
    return [m.content or "" for m in log if m.role in ("user", "assistant") and m.content]


async def test_fork_at_a_turn_end_with_an_edited_message_runs_nothing_of_the_prefix(
        client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello", "thanks"):
            await send_turn(client, handle.id, text)
        points = await list_checkpoints(client, handle.id)
        assert [p.kind for p in points] == [
            "turn", "model", "tool", "model", "turn_end",
            "turn", "model", "turn_end", "turn", "model", "turn_end"]
        assert [p.turn for p in points if p.kind == "turn_end"] == [1, 2, 3]
        assert points[2].description == "tool result (execute_refund)"
        before, calls_before = await event_count(handle), len(model.requests)
        end_of_1 = points[4]
        forked = await fork(client, handle.id, at=end_of_1.id, message="refund B2")
        reply = await send_turn(client, forked.workflow_id, "and one more thing")
        fork_log = await shared(client, forked.workflow_id)
        status = await client.get_workflow_handle(forked.workflow_id).query(TeamWorkflow.status)
        fork_points = await list_checkpoints(client, forked.workflow_id)
        fork_history = await client.get_workflow_handle(forked.workflow_id).fetch_history()
    assert fork_log == ["refund A1", "done: refunded A1", "refund B2", "done: refunded B2",
                        "and one more thing", "support heard: and one more thing"]
    assert reply.turn == 3 and reply.text == "support heard: and one more thing"
    # the fork made only its own model calls: two for the edited turn, one for the next
    assert len(model.requests) - calls_before == 3
    assert REFUNDS == {"A1": 1, "B2": 1}  # the original's refund ran once, never again
    assert await event_count(handle) == before  # the original is untouched
    assert status.forked_from == f"{handle.id}@{end_of_1.id}"
    # the fork lists the prefix it inherited, then its own steps
    assert [p.id for p in fork_points[:5]] == [p.id for p in points[:5]]
    assert [(p.kind, p.turn) for p in fork_points[5:7]] == [("turn", 2), ("turn", 3)]
    assert await replays(client, fork_history)  # a fork's run replays as it ran


async def test_a_fork_of_a_fork(client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello"):
            await send_turn(client, handle.id, text)
        end_of_1 = [p for p in await list_checkpoints(client, handle.id) if p.kind == "turn_end"][0]
        first = await fork(client, handle.id, at=end_of_1.id)
        await send_turn(client, first.workflow_id, "refund B2")
        own_end = [p for p in await list_checkpoints(client, first.workflow_id) if p.kind == "turn_end"][-1]
        calls = len(model.requests)
        second = await fork(client, first.workflow_id, at=own_end.id, message="bye")
        await send_turn(client, second.workflow_id, "again")  # answered after "bye"
        again = await fork(client, first.workflow_id, at=end_of_1.id)  # an inherited checkpoint
        second_log = await shared(client, second.workflow_id)
        second_points = await list_checkpoints(client, second.workflow_id)
    assert second_log == ["refund A1", "done: refunded A1", "refund B2", "done: refunded B2",
                          "bye", "support heard: bye", "again", "support heard: again"]
    assert len(model.requests) - calls == 2 and REFUNDS == {"A1": 1, "B2": 1}
    assert [p.turn for p in second_points if p.kind == "turn_end"] == [1, 2, 3, 4]
    assert again.forked_from == f"{handle.id}@{end_of_1.id}"  # made where the checkpoint is


async def test_fork_at_a_turn_start_regenerates_that_turn_with_the_edit(client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("hello", "refund A1", "bye"):
            await send_turn(client, handle.id, text)
        points = await list_checkpoints(client, handle.id)
        turn_2 = next(p for p in points if p.kind == "turn" and p.turn == 2)
        assert turn_2.text == "refund A1"
        calls_before = len(model.requests)
        forked = await fork(client, handle.id, at=turn_2.id, message="refund C3")
        result = await client.get_workflow_handle(forked.workflow_id).query(TeamWorkflow.status)
        while result.turns < 2 or result.last_reply is None or result.last_reply.turn < 2:
            await send_turn(client, forked.workflow_id, "status?")  # waits on the fork's turn queue
            result = await client.get_workflow_handle(forked.workflow_id).query(TeamWorkflow.status)
        fork_log = await shared(client, forked.workflow_id)
    assert fork_log[:4] == ["hello", "support heard: hello", "refund C3", "done: refunded C3"]
    assert REFUNDS == {"A1": 1, "C3": 1}
    assert len(model.requests) - calls_before == 3  # the edited turn's two calls and "status?"


async def test_bad_checkpoints_are_refused_with_a_reason(client: Client, task_queue: str) -> None:
    team = support()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        one, other = await start(client, task_queue, team), await start(client, task_queue, team)
        await send_turn(client, one.id, "refund A1")
        await send_turn(client, other.id, "hi")
        theirs = (await list_checkpoints(client, other.id))[-1].id
        inside = next(p for p in await list_checkpoints(client, one.id) if p.kind == "tool")
        with pytest.raises(CheckpointError, match="is not a checkpoint of thread"):
            await fork(client, one.id, at=theirs)
        own_run = inside.id.split(".")[0]
        with pytest.raises(CheckpointError, match="has no checkpoint"):
            await fork(client, one.id, at=f"{own_run}.99999")
        with pytest.raises(CheckpointError, match="inside a turn .* takes no --message"):
            await fork(client, one.id, at=inside.id, message="refund B2")
        with pytest.raises(CheckpointError, match="inside a turn"):
            await rewind(client, one.id, to=inside.id)
        first = next(p for p in await list_checkpoints(client, one.id) if p.kind == "turn")
        with pytest.raises(CheckpointError) as refused:
            await rewind(client, one.id, to=first.id)
    assert str(refused.value) == ("the first turn has nothing before it to rewind to; fork it instead: "
                                  f"durable-teams fork {one.id} --at {first.id}")
    assert REFUNDS == {"A1": 1}


async def test_rewind_continues_the_thread_from_a_turn_end_and_keeps_the_abandoned_run(
        client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("hello", "refund A1", "thanks"):
            await send_turn(client, handle.id, text)
        old_run = (await handle.describe()).run_id
        abandoned = await event_count(client.get_workflow_handle(handle.id, run_id=old_run))
        before = await list_checkpoints(client, handle.id)
        end_of_1 = [p for p in before if p.kind == "turn_end"][0]
        new_run = await rewind(client, handle.id, to=end_of_1.id)
        reply = await send_turn(client, handle.id, "refund B2")
        log = await shared(client, handle.id)
        after = await list_checkpoints(client, handle.id)
        rewound_history = await handle.fetch_history()
        old_log_count = await event_count(client.get_workflow_handle(handle.id, run_id=old_run))
        old_status = (await client.get_workflow_handle(handle.id, run_id=old_run).describe()).status
    assert new_run != old_run and (await handle.describe()).run_id == new_run
    assert (reply.turn, reply.text) == (2, "done: refunded B2")
    assert log == ["hello", "support heard: hello", "refund B2", "done: refunded B2"]
    assert REFUNDS == {"A1": 1, "B2": 1}  # the abandoned branch's refund is not run again
    assert old_log_count == abandoned + 1  # still there to read, ended by the reset
    assert old_status == WorkflowExecutionStatus.TERMINATED
    # the prefix keeps its ids; the step rewound to ran again (a reset re-runs it), with a new id
    assert [p.id for p in after[:2]] == [p.id for p in before[:2]]
    assert await replays(client, rewound_history)  # a rewound run replays as it ran
    assert [(p.kind, p.turn) for p in after[2:]] == [("turn_end", 1),
        ("turn", 2), ("model", None), ("tool", None), ("model", None), ("turn_end", 2)]


@pytest.mark.slow
async def test_the_cli_lists_forks_and_rewinds_and_refuses_in_one_line(client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    env = cli_env(client)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello"):
            await send_turn(client, handle.id, text)
        listed = await run_cli("checkpoints", handle.id, env=env)
        end_of_1 = [p for p in await list_checkpoints(client, handle.id) if p.kind == "turn_end"][0]
        forked = await run_cli("fork", handle.id, "--at", end_of_1.id, "--message", "refund B2",
                               "--id", f"{handle.id}-b", env=env)
        reply = await send_turn(client, f"{handle.id}-b", "ok")
        unknown = await run_cli("fork", handle.id, "--at", "nope.1", env=env)
        left = (await handle.describe()).run_id
        rewound = await run_cli("rewind", handle.id, "--to", end_of_1.id, env=env)
        status = await handle.query(TeamWorkflow.status)
        status_run = (await handle.describe()).run_id
        abandoned = await run_cli("checkpoints", handle.id, "--run-id", left, env=env)
    assert listed.code == 0
    lines = listed.out.splitlines()
    assert len(lines) == 8 and "tool     " in lines[2] and "tool result (execute_refund)" in lines[2]
    assert f"{end_of_1.id} " in lines[4] and "turn 1 ended (completed): done: refunded A1" in lines[4]
    assert (forked.code, forked.out.splitlines()[0]) == (0, f"{handle.id}-b")
    assert reply.turn == 3 and REFUNDS == {"A1": 1, "B2": 1}
    assert unknown.code == 1 and unknown.err.strip() == (
        f"durable-teams: 'nope.1' is not a checkpoint of thread {handle.id} "
        f"(list them: durable-teams checkpoints {handle.id})")
    assert rewound.code == 0 and status.turns == 1
    assert rewound.out.splitlines() == [
        f"{handle.id} continues from {end_of_1.id} (run {status_run}); the abandoned branch stays readable: "
        f"durable-teams checkpoints {handle.id} --run-id {left}",
        "abandoned: turn 2 ('hello'), answered"]
    assert (abandoned.code, abandoned.out) == (0, listed.out)  # the abandoned branch, as it was


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_checkpoints_of_conversations_recorded_by_the_previous_release(client: Client, path: Path) -> None:
    history = WorkflowHistory.from_json(WORKFLOW_IDS.get(path.stem, path.stem), path.read_text())  # noqa: ASYNC240 - a small file
    points, forked_from = await run_checkpoints(client, history)
    replayed = await replay_history(client, history)
    ends = [p.turn for p in points if p.kind == "turn_end"]
    assert (forked_from is not None) == (path.stem == "forked_conversation")
    taken = [p.turn or 0 for p in points if p.kind == "turn"]
    inherited = 0 if forked_from is None else taken[0] - 1  # the turns of a fork's prefix
    assert inherited == (1 if path.stem == "forked_conversation" else 0)
    assert ends == [n for n in sorted(replayed.state.replies) if n > inherited]  # one end per reply
    assert [p.turn for p in points if p.kind == "turn"] == list(range(inherited + 1, replayed.state.turns_started + 1))
    assert len({p.id for p in points}) == len(points)
    if path.stem in ("acme_conversation", "local_model_calls", "faang"):
        assert any(p.kind == "model" for p in points)  # regular or local model calls


@pytest.mark.slow
async def test_a_breakpoint_before_the_refund_resumed_with_edited_arguments_through_the_cli(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()
    env = cli_env(client)
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await start(client, task_queue, team)
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        question = await pending_question(handle)
        bad = await run_cli("approve", handle.id, "--arguments", "[1]", env=env)
        resumed = await run_cli("approve", handle.id, "--arguments", '{"order": "A2"}', env=env)
        reply = await turn
        stopped_turn = asyncio.ensure_future(send_turn(client, handle.id, "refund B1"))
        await pending_question(handle)
        stopped = await run_cli("deny", handle.id, "--reason", "wrong order", env=env)
        stopped_reply = await stopped_turn
        history = await handle.fetch_history()
    assert (question.kind, question.tool, question.arguments, question.breakpoint) == (
        "approval", "execute_refund", '{"order": "A1"}', True)
    assert bad.code == 1 and "--arguments takes a JSON object" in bad.err
    assert resumed.code == 0, resumed.both
    assert reply.text == 'done: (The user changed the arguments to {"order": "A2"} before it ran.) refunded A2'
    assert stopped.code == 0
    assert stopped_reply.text == "done: The user stopped execute_refund at a breakpoint: wrong order. It was not run."
    assert REFUNDS == {"A2": 1}
    assert await replays(client, history)  # a breakpoint's conversation replays


def test_a_breakpoint_on_a_tool_the_team_lacks_is_refused_where_the_team_is_defined() -> None:
    with pytest.raises(TeamError, match=r"interrupt_before names no tool or agent of team 'swarm': execute_refnd \(its tools: execute_refund"):
        Swarm([Agent("support", "Help.", tools=[execute_refund])], interrupt_before=["execute_refnd"])


@pytest.mark.slow  # over a second: out of the quick loop
async def test_checkpoints_before_a_continue_as_new_are_listed_and_forkable(client: Client, task_queue: str) -> None:
    team = support()
    team.spec.continue_as_new_after_events = 20  # passed by the end of the first turn
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello", "thanks"):
            await send_turn(client, handle.id, text)
        status = await handle.query(TeamWorkflow.status)
        points = await list_checkpoints(client, handle.id)
        end_of_1 = [p for p in points if p.kind == "turn_end"][0]
        calls = len(model.requests)
        forked = await fork(client, handle.id, at=end_of_1.id, message="refund B2")
        reply = await send_turn(client, forked.workflow_id, "ok")
        fork_log = await shared(client, forked.workflow_id)
    runs = {p.run_id for p in points}
    assert len(runs) >= 2 and end_of_1.run_id == points[0].run_id  # turn 1 was in the first run
    assert [p.turn for p in points if p.kind == "turn_end"] == [1, 2, 3] == [
        p.turn for p in points if p.kind == "turn"]
    assert status.turns == 3
    assert fork_log == ["refund A1", "done: refunded A1", "refund B2", "done: refunded B2", "ok", "support heard: ok"]
    assert reply.turn == 3 and len(model.requests) - calls == 3 and REFUNDS == {"A1": 1, "B2": 1}


async def test_a_fork_while_a_question_is_open_asks_it_again_in_the_fork(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "hello")
        turn = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        asked = await pending_question(handle)
        points = await list_checkpoints(client, handle.id)
        open_turn = next(p for p in points if p.kind == "turn" and p.turn == 2)
        inside = points[-1]
        again = await fork(client, handle.id, at=open_turn.id)  # the open turn, from its start
        asked_again = await pending_question(client.get_workflow_handle(again.workflow_id))
        latest = await fork(client, handle.id)  # default: the latest turn end, before the open turn
        latest_status = await client.get_workflow_handle(latest.workflow_id).query(TeamWorkflow.status)
        inside_fork = await fork(client, handle.id, at=inside.id)  # the turn goes on: asked again
        asked_inside = await pending_question(client.get_workflow_handle(inside_fork.workflow_id))
        original = await handle.query(TeamWorkflow.pending_questions)
        await send_reply(client, handle.id, asked.question_id, approved=True)
        await turn
        for open_fork in (again, inside_fork):  # leaves no question open
            await client.get_workflow_handle(open_fork.workflow_id).terminate("test over")
    assert (asked_again.tool, asked_again.arguments) == (asked.tool, asked.arguments)
    assert (asked_inside.question_id, asked_inside.arguments) == (asked.question_id, asked.arguments)
    assert [q.question_id for q in original] == [asked.question_id]  # still open in the original
    assert (latest_status.turns, latest_status.pending) == (1, [])
    assert REFUNDS == {"A1": 1}  # the fork's question is unanswered: its refund has not run


@pytest.mark.slow  # three turns over three runs, two rewinds: several seconds
async def test_rewind_to_a_turn_end_of_an_earlier_run_before_a_continue_as_new(
        client: Client, task_queue: str) -> None:
    team = support()
    team.spec.continue_as_new_after_events = 20  # passed by the end of the first turn
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model):
        handle = await start(client, task_queue, team)
        for text in ("refund A1", "hello", "refund C3"):
            await send_turn(client, handle.id, text)
        last_run = (await handle.describe()).run_id
        before = await list_checkpoints(client, handle.id)
        end_of_1 = next(p for p in before if p.kind == "turn_end")
        calls = len(model.requests)
        new_run = await rewind(client, handle.id, to=end_of_1.id)
        reply = await send_turn(client, handle.id, "refund B2")
        log = await shared(client, handle.id)
        own_calls = len(model.requests) - calls
        after = await list_checkpoints(client, handle.id)
        abandoned = await list_checkpoints(client, handle.id, run_id=last_run)
        last_status = (await client.get_workflow_handle(handle.id, run_id=last_run).describe()).status
        rewound_history = await client.get_workflow_handle(handle.id, run_id=new_run).fetch_history()
        # again, to the new branch's turn 2 end: a run made by a reset, whose history names
        # the run it was reset from
        end_of_2 = next(p for p in after if p.kind == "turn_end" and p.turn == 2)
        again = await rewind(client, handle.id, to=end_of_2.id)
        third = await send_turn(client, handle.id, "thanks")
        final_log = await shared(client, handle.id)
    assert len({p.run_id for p in before}) >= 2 and end_of_1.run_id == before[0].run_id
    assert end_of_1.run_id != last_run
    assert (reply.turn, reply.text) == (2, "done: refunded B2")
    assert log == ["refund A1", "done: refunded A1", "refund B2", "done: refunded B2"]
    assert own_calls == 2  # B2's two model calls: nothing of the prefix ran again
    assert REFUNDS == {"A1": 1, "C3": 1, "B2": 1}  # each paid once, in its own branch
    assert last_status == WorkflowExecutionStatus.TERMINATED  # ended by the reset, readable
    assert [p.id for p in abandoned] == [p.id for p in before]  # the abandoned branch, whole
    assert [p.id for p in after[:4]] == [p.id for p in before[:4]]  # the prefix keeps its ids
    assert [(p.kind, p.turn) for p in after[4:]] == [("turn_end", 1),
        ("turn", 2), ("model", None), ("tool", None), ("model", None), ("turn_end", 2)]
    assert await replays(client, rewound_history)
    assert again not in (new_run, last_run) and (third.turn, third.text) == (3, "support heard: thanks")
    assert final_log == [*log, "thanks", "support heard: thanks"]
    assert REFUNDS == {"A1": 1, "C3": 1, "B2": 1}
