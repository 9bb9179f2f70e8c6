"""A turn a conversation took while a rewind abandoned its branch (the turn came after the
checkpoint rewound to): its sender gets a refusal that says so, through the Python client and
over HTTP, never another turn's reply nor an endless wait; a turn sent after the rewind is
answered in the branch that goes on. Deterministic: each turn is held at a breakpoint (an
approval no one gives) while the rewind happens."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import httpx
import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import QuestionClosed, TurnAbandoned
from durable_teams.client.send import send_reply, send_turn, submit_turn
from durable_teams.client.time_travel import list_checkpoints, rewind
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import QUESTION_CLOSED
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .gateway_helpers import running_gateway, sse_events
from .time_travel_team import REFUNDS, execute_refund, support_model
from .waiting import pending_question

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


def held() -> CompiledTeam:
    """The support team, asking before each refund: a refund turn waits there."""
    return Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def shared(handle: WorkflowHandle) -> list[str]:
    log = await handle.query(TeamWorkflow.transcript)
    return [m.content or "" for m in log if m.role in ("user", "assistant") and m.content]


async def end_of_turn(client: Client, workflow_id: str, turn: int) -> str:
    points = await list_checkpoints(client, workflow_id)
    return next(p.id for p in points if p.kind == "turn_end" and p.turn == turn)


@pytest.mark.slow  # two rewinds and a gateway: several seconds
async def test_a_turn_in_flight_during_a_rewind_is_refused_with_a_reason_and_the_next_one_answered(
        client: Client, task_queue: str) -> None:
    team = held()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "hello")
        end_of_1 = await end_of_turn(client, handle.id, 1)
        # the Python client: the turn is accepted (turn 2) and waits for an approval
        waiting = asyncio.ensure_future(send_turn(client, handle.id, "refund A1"))
        await pending_question(handle)
        await rewind(client, handle.id, to=end_of_1)
        with pytest.raises(TurnAbandoned) as abandoned:
            await asyncio.wait_for(waiting, 60)
        after_python = await send_turn(client, handle.id, "thanks")
        # over HTTP: the same, in the turn's event stream
        async with http.stream("POST", f"/threads/{handle.id}/turns", json={"text": "refund B2"}) as resp:
            frames = sse_events(resp)
            await pending_question(handle)
            await rewind(client, handle.id, to=await end_of_turn(client, handle.id, 2))
            streamed = [frame async for frame in frames]
        after_http = await send_turn(client, handle.id, "bye")
        log = await shared(handle)
    assert str(abandoned.value) == (
        f"turn 2 of conversation {handle.id} was taken by the branch a rewind abandoned (it came "
        "after the checkpoint rewound to), so the conversation that goes on will not answer it; send it again")
    assert (after_python.turn, after_python.text) == (2, "support heard: thanks")
    assert resp.status_code == 200  # accepted before the rewind: the reason comes in the stream
    kind, last = streamed[-1]
    assert kind == "error" and last["text"].startswith(f"turn 3 of conversation {handle.id} was taken by the branch a rewind abandoned")
    assert not any(k == "done" for k, _ in streamed)
    assert (after_http.turn, after_http.text) == (3, "support heard: bye")
    assert log == ["hello", "support heard: hello", "thanks", "support heard: thanks", "bye", "support heard: bye"]
    assert REFUNDS == {}  # neither held refund was approved: none ran


async def test_a_turn_accepted_before_a_rewind_and_waited_on_after_it_is_refused(
        client: Client, task_queue: str) -> None:
    team = held()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await start(client, task_queue, team)
        await send_turn(client, handle.id, "hello")
        end_of_1 = await end_of_turn(client, handle.id, 1)
        accepted = await submit_turn(client, handle.id, "refund A1")  # the run rewound away from
        old_question = await pending_question(handle)
        await rewind(client, handle.id, to=end_of_1)
        with pytest.raises(TurnAbandoned, match="send it again"):
            await asyncio.wait_for(accepted.reply(), 60)  # the new run is idle: nothing else wakes it
        with pytest.raises(QuestionClosed):  # the abandoned branch's approval is asked no more
            await send_reply(client, handle.id, old_question.question_id, approved=True)
        again = await submit_turn(client, handle.id, "refund A1", turn_id=accepted.turn.turn_id)
        asked = await pending_question(handle)
        await handle.terminate("test over")  # leaves no question open
    assert (accepted.number, again.number) == (2, 2)
    assert asked.arguments == '{"order": "A1"}'  # sent again with its id: taken by the new branch
    assert REFUNDS == {}


class RunEndsAsTheTurnArrives:
    """A conversation whose run ends (a rewind's reset, a continue-as-new) as the turn reaches
    it: the server answers the first update NOT_FOUND while the thread goes on in a new run."""

    def __init__(self) -> None:
        self.updates = 0

    def get_workflow_handle(self, workflow_id: str) -> RunEndsAsTheTurnArrives:
        return self

    async def describe(self) -> SimpleNamespace:
        return SimpleNamespace(status=WorkflowExecutionStatus.RUNNING)

    async def start_update(self, *args: object, **kwargs: object) -> SimpleNamespace:
        self.updates += 1
        if self.updates == 1:
            raise RPCError("workflow execution already completed", RPCStatusCode.NOT_FOUND, b"")

        async def result() -> int:
            return 2
        return SimpleNamespace(result=result, workflow_run_id="run-after-the-reset")


async def test_a_turn_reaching_a_run_as_a_reset_ends_it_goes_to_the_run_that_goes_on() -> None:
    server = RunEndsAsTheTurnArrives()
    accepted = await submit_turn(server, "t1", "refund A1", turn_id="the-turn")  # type: ignore[arg-type]
    assert (server.updates, accepted.number, accepted.run_id) == (2, 2, "run-after-the-reset")


class AnswerReachesAnEndingRun(RunEndsAsTheTurnArrives):
    """The same for an answer: the first update meets the ended run; the run that goes on no
    longer asks the question (a rewind went back before it)."""

    async def execute_update(self, *args: object, **kwargs: object) -> None:
        self.updates += 1
        if self.updates == 1:
            raise RPCError("workflow execution already completed", RPCStatusCode.NOT_FOUND, b"")
        raise WorkflowUpdateFailedError(ApplicationError(
            "question q1 is not pending", QUESTION_CLOSED, type="ReplyRejected"))


async def test_an_answer_reaching_a_run_as_a_reset_ends_it_is_refused_by_the_run_that_goes_on() -> None:
    server = AnswerReachesAnEndingRun()
    with pytest.raises(QuestionClosed, match="question q1 is not pending"):
        await send_reply(server, "t1", "q1", approved=True)  # type: ignore[arg-type]
    assert server.updates == 2


async def test_the_cli_says_an_abandoned_turn_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command whose turn a rewind abandoned (`durable-teams run` on a thread someone rewinds):
    the reason, not a type name; `chat` says it and goes on."""
    from durable_teams.cli import command_line as cli

    async def abandoned(args: object) -> int:
        raise TurnAbandoned("turn 2 of conversation t1 was taken by the branch a rewind abandoned; send it again")
    monkeypatch.setitem(cli.COMMANDS, "run", abandoned)
    said = await cli.run_command(SimpleNamespace(command="run", workflow_id="t1"))  # type: ignore[arg-type]
    assert said == "durable-teams: turn 2 of conversation t1 was taken by the branch a rewind abandoned; send it again"
