"""A push workflow started by an earlier release carries a cursor without a place in the
conversation's history (`STATE:digest`): its watch follows the task by polling its state, as
those releases did, and tells the first notified state other than the one told last, or
nothing when its watch time ends (the workflow looks again)."""

from __future__ import annotations

import pytest
from temporalio.testing import ActivityEnvironment

from durable_teams.activities import a2a_push_delivery
from durable_teams.activities.a2a_push_delivery import watch_a2a_task
from durable_teams.workflows.a2a_push import WatchRequest
from durable_teams.workflows.a2a_tasks import TaskState
from durable_teams.workflows.push_targets import signature

pytestmark = pytest.mark.pure

ASKED = TaskState("INPUT_REQUIRED", "[desk] What's your order number?")


def states(*seen: TaskState) -> object:
    """`task_state` that answers `seen` in order, then the last one for ever."""
    left = list(seen)

    async def task_state(thread: str, turn: int) -> TaskState:
        return left.pop(0) if len(left) > 1 else left[0]

    return task_state


async def test_a_legacy_watch_polls_until_the_state_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    working = TaskState("WORKING", "")
    done = TaskState("COMPLETED", "Your refund is on its way.")
    monkeypatch.setattr(a2a_push_delivery, "task_state", states(ASKED, working, done))
    change = await ActivityEnvironment().run(watch_a2a_task, WatchRequest(
        thread="t1", turn=2, last=signature(ASKED), poll_seconds=0.001, watch_seconds=30))
    assert (change.signature, change.state) == (signature(done), "COMPLETED")
    status = change.event["statusUpdate"]
    assert isinstance(status, dict) and status["taskId"] == "t1::2"
    assert status["status"]["message"]["parts"] == [{"text": "Your refund is on its way."}]


async def test_a_legacy_watch_with_nothing_new_ends_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(a2a_push_delivery, "task_state", states(ASKED))
    change = await ActivityEnvironment().run(watch_a2a_task, WatchRequest(
        thread="t1", turn=2, last=signature(ASKED), poll_seconds=0.001, watch_seconds=0.01))
    assert (change.signature, change.state, change.event) == ("", "", {})
