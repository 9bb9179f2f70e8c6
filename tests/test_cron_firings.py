"""`fire_cron` (durable_teams/activities/cron_firings.py) on its retries and refusals, with a
stand-in client: an attempt after one that started the thread begins the same run; a thread
that ended or refused the turn is a refusal said in words (the firing's workflow ends noting
it), never an activity failing on every retry; any other server error is raised (retried)."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.cron_firings import fire_cron, thread_of
from durable_teams.workflows.scheduled_turns import Fired, Firing, ScheduledTurn
from durable_teams.workflows.state import ConversationInput

pytestmark = pytest.mark.workflow  # temporalio.testing.ActivityEnvironment (no server)


class Handle:
    def __init__(self, outcome: int | BaseException) -> None:
        self.outcome = outcome
        self.sent: list[Any] = []

    async def execute_update(self, update: Any, turn: Any) -> int:
        self.sent.append(turn)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class StandIn:
    """The calls `fire_cron` makes of its client."""

    def __init__(self, handle: Handle | None = None, started: BaseException | None = None) -> None:
        self.handle, self.started, self.starts = handle, started, 0

    async def start_workflow(self, *args: Any, **kwargs: Any) -> None:
        self.starts += 1
        if self.started is not None:
            raise self.started

    def get_workflow_handle(self, workflow_id: str) -> Handle:
        assert self.handle is not None
        return self.handle


def firing(thread: str = "", start: bool = False) -> Firing:
    turn = ScheduledTurn(thread=thread, text="the daily report",
                         start=ConversationInput(team_name="faang", task="the daily report") if start else None)
    return Firing(id="langgraph-cron-abc-run-2026", turn_id="cron-1", turn=turn, task_queue="tq")


async def fired(client: StandIn, of: Firing) -> Fired:
    return await ActivityEnvironment(client=client).run(fire_cron, of)  # type: ignore[arg-type]


async def test_an_attempt_after_the_one_that_started_the_thread_begins_the_same_run() -> None:
    of = firing(start=True)
    first = await fired(StandIn(), of)
    again = await fired(StandIn(started=WorkflowAlreadyStartedError(thread_of(of), "TeamWorkflow")), of)
    assert first == again == Fired(thread="langgraph-cron-abc-run-2026-thread", turn=1)


async def test_a_thread_cron_posts_the_turn_under_the_firings_id() -> None:
    handle = Handle(4)
    assert await fired(StandIn(handle), firing("t-1")) == Fired(thread="t-1", turn=4)
    assert [(t.text, t.turn_id, t.sender) for t in handle.sent] == [("the daily report", "cron-1", "cron")]


@pytest.mark.parametrize(("error", "refused"), [
    (WorkflowUpdateFailedError(ApplicationError("conversation t-1 is closing")), "conversation t-1 is closing"),
    (RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b""), "the thread t-1 has ended"),
])
async def test_a_thread_that_refuses_the_turn_is_a_refusal_in_words(error: BaseException, refused: str) -> None:
    assert await fired(StandIn(Handle(error)), firing("t-1")) == Fired(refused=refused)


async def test_any_other_server_error_is_raised_for_the_activitys_retry() -> None:
    with pytest.raises(RPCError, match="busy"):
        await fired(StandIn(Handle(RPCError("busy", RPCStatusCode.UNAVAILABLE, b""))), firing("t-1"))
