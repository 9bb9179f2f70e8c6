"""The A2A push watch's place in a run's history (durable_teams/activities/a2a_push_log.py), with
a stand-in server: a heartbeat a retried watch cannot read starts it afresh; a long poll the
server cut short is asked again; a place the server no longer takes reads the run from its
start; any other refusal is raised (the activity is retried)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.activities.a2a_push_log import HistoryPlace, RunLog

pytestmark = pytest.mark.pure


class Service:
    def __init__(self, error: RPCError) -> None:
        self.error, self.asked = error, 0

    async def get_workflow_execution_history(self, request: Any, **kwargs: Any) -> Any:
        self.asked += 1
        raise self.error


class StandIn:
    namespace = "default"

    def __init__(self, error: RPCError) -> None:
        self.workflow_service = Service(error)


def refused(status: RPCStatusCode) -> RPCError:
    return RPCError(f"refused: {status.name}", status, b"")


def test_a_heartbeat_a_retried_watch_cannot_read_is_no_place() -> None:
    assert HistoryPlace.resumed([{"run": "r1", "token": "", "last": 7}]) == HistoryPlace(run="r1", last=7)
    assert HistoryPlace.resumed([{"token": 5}]) is None
    assert HistoryPlace.resumed([]) is None


@pytest.mark.parametrize("status", [RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED])
async def test_a_long_poll_cut_short_is_asked_again(status: RPCStatusCode) -> None:
    place = HistoryPlace(run="r1", token=base64.b64encode(b"page-3").decode(), last=40, seen=["q1"])
    log = RunLog(StandIn(refused(status)), "t-1", place)  # type: ignore[arg-type]
    assert await log.page() == []
    assert place.token and place.last == 40 and log.seen == {"q1"}  # kept: it reads on from there


async def test_a_place_the_server_no_longer_takes_reads_the_run_from_its_start() -> None:
    place = HistoryPlace(run="r1", token=base64.b64encode(b"page-3").decode(), last=40, seen=["q1"])
    log = RunLog(StandIn(refused(RPCStatusCode.INVALID_ARGUMENT)), "t-1", place)  # type: ignore[arg-type]
    assert await log.page() == []
    assert place == HistoryPlace(run="r1") and log.seen == set()


@pytest.mark.parametrize(("status", "token"), [(RPCStatusCode.UNAVAILABLE, "cGFnZQ=="),
                                                (RPCStatusCode.INVALID_ARGUMENT, "")])
async def test_any_other_refusal_is_raised_for_the_activitys_retry(status: RPCStatusCode, token: str) -> None:
    log = RunLog(StandIn(refused(status)), "t-1", HistoryPlace(run="r1", token=token))  # type: ignore[arg-type]
    with pytest.raises(RPCError, match="refused"):
        await log.page()
