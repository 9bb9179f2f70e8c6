"""100 concurrent turns on one thread through the gateway never wedge it or lose one: every
request is accepted (and then in the thread, whether or not its client stays) or refused with
429 and a reason, and the thread stays queryable and replayable."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer

from durable_teams.client.refusals import ConversationBusy, Patience
from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.errors import on_temporal_error
from durable_teams.gateway.core.thread_log import ThreadLog
from durable_teams.gateway.core.threads import Gateway
from durable_teams.live.hub import LIVE
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.options import ModelCalls

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, GatedModel
from .waiting import WITHIN, until

pytestmark = pytest.mark.workflow


async def one_turn(http: httpx.AsyncClient, thread: str, n: int) -> tuple[int, str]:
    """A client that reads its turn's first event and leaves (every fifth stays to the end);
    (status, error message or "")."""
    async with http.stream("POST", f"/threads/{thread}/turns", json={"text": f"message {n}"}) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return resp.status_code, resp.json()["error"]["message"]
        async for line in resp.aiter_lines():
            if n % 5 and line:
                break
        return resp.status_code, ""


async def all_of(sending: list[asyncio.Future[tuple[int, str]]], handle: WorkflowHandle) -> list[tuple[int, str]]:
    """Every client's outcome. A hundred turns answered one after another take ~15 s on an idle
    machine and several times that beside a parallel suite: the deadline is far above both, and
    a miss says how far the thread got (a stalled stream and a slow worker read differently)."""
    done, pending = await asyncio.wait(sending, timeout=WITHIN * 3)
    if pending:
        status = await handle.query(TeamWorkflow.status)
        for future in pending:
            future.cancel()
        raise AssertionError(f"{len(pending)} of {len(sending)} clients unfinished after {WITHIN * 3:.0f} s; "
                             f"thread at {status.turns} turns, {status.queued_turns} queued")
    return [future.result() for future in sending]


REGULAR = Swarm([Agent("echo", "Repeat what you hear.")], name="echo",
                model_calls=ModelCalls(local=False)).compile()


@pytest.mark.slow  # a hundred turns at once
@pytest.mark.parametrize("team", [TEAM, REGULAR], ids=["local", "regular"])
async def test_hundred_concurrent_turns_are_each_accepted_or_refused_and_none_is_lost(
        client: Client, task_queue: str, team: CompiledTeam) -> None:
    model = GatedModel()  # holds the first turn while the others arrive
    # A hundred connections share one event loop with the gateway: on a busy machine a request's
    # headers or body may take over the default 10 s to be read, which is not what this checks.
    roomy = Limits(max_requests=500, max_followers=500, body_seconds=120)
    async with running_worker(client, task_queue, [team], model), \
            running_gateway(client, task_queue, teams=[TEAM.spec.name], limits=roomy,
                            busy_seconds=0.5, header_timeout=120) as url, \
            httpx.AsyncClient(base_url=url, timeout=120) as http:
        thread = f"conc-{uuid.uuid4().hex[:8]}"
        assert (await http.post("/threads", json={"team": TEAM.spec.name, "thread_id": thread})).status_code == 201
        sending = [asyncio.ensure_future(one_turn(http, thread, n)) for n in range(100)]
        asyncio.get_running_loop().call_later(1.0, model.gate.set)
        outcomes = await all_of(sending, client.get_workflow_handle(thread))
        accepted = sum(code == 200 for code, _ in outcomes)
        handle = client.get_workflow_handle(thread)

        async def answered() -> bool:  # the accepted turns, clients gone or not
            return not (await handle.query(TeamWorkflow.status)).queued_turns
        await until(answered, "every accepted turn answered")
        status = await handle.query(TeamWorkflow.status)
        transcript = await handle.query(TeamWorkflow.transcript)
        history = await handle.fetch_history()
    refused = [message for code, message in outcomes if code != 200]
    assert {code for code, _ in outcomes} <= {200, 429}
    assert all("did not take the turn" in message for message in refused), refused[:3]
    assert accepted >= 10  # Temporal admits 10 in flight; more as the first are answered
    assert status.turns == accepted  # every acknowledged turn is in the thread, none twice
    assert sorted(m.content for m in transcript if m.role == "user") == sorted(
        f"message {n}" for n, (code, _) in enumerate(outcomes) if code == 200)
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    if result.replay_failure is not None:  # keep the history for a look
        path = Path(__file__).parent / f"failed-replay-{thread}.json"
        path.write_text(history.to_json())
    timed_out = [e.event_id for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT]
    assert result.replay_failure is None, (
        f"{result.replay_failure}; workflow tasks timed out at events {timed_out} (after one, temporalio 1.35.0 "
        "may record commands in an order it cannot replay: tests/test_replay_update_order.py)")


async def test_one_caller_past_its_stream_limit_gets_429_with_the_reason(client: Client, task_queue: str) -> None:
    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model), \
            running_gateway(client, task_queue, teams=[TEAM.spec.name],
                            limits=Limits(max_followers=3)) as url, \
            httpx.AsyncClient(base_url=url, timeout=120) as http:
        thread = f"conc-{uuid.uuid4().hex[:8]}"
        await http.post("/threads", json={"team": TEAM.spec.name, "thread_id": thread})
        streams = [http.stream("GET", f"/threads/{thread}/events") for _ in range(3)]
        opened = [await s.__aenter__() for s in streams]
        fourth = await http.get(f"/threads/{thread}/events")
        for s in streams:
            await s.__aexit__(None, None, None)
        model.gate.set()
    assert [r.status_code for r in opened] == [200, 200, 200]
    assert fourth.status_code == 429 and fourth.headers["retry-after"] == "1"
    assert fourth.json()["error"]["message"] == "too many open streams for this caller; try again later"


class SlowToAnswer(ThreadLog):
    """A thread log whose query times out `failures` times (a server too busy to answer)."""

    def __init__(self, failures: int) -> None:
        super().__init__(client=None, hub=LIVE, poll_seconds=0.1)  # type: ignore[arg-type]
        self.failures, self.asked = failures, 0

    async def log_total(self, thread: str) -> int:
        self.asked += 1
        if self.asked <= self.failures:
            raise RPCError("Timeout expired", RPCStatusCode.DEADLINE_EXCEEDED, b"")
        return 7


def slow_gateway(failures: int) -> tuple[Gateway, SlowToAnswer]:
    """A gateway reading its threads' logs through `SlowToAnswer`."""
    gateway = Gateway(client=None, task_queue="q", busy_seconds=0.3)  # type: ignore[arg-type]
    gateway.log = gateway.exchanges.log = slow = SlowToAnswer(failures)
    return gateway, slow


async def test_a_server_too_busy_to_answer_is_a_429_with_the_reason_or_is_waited_out() -> None:
    busy, log = slow_gateway(failures=1_000)
    with pytest.raises(ConversationBusy, match=r"did not take the turn within 0.3 s: Timeout expired"):
        await busy.accept_turn("t1", "hi", None, None)
    assert log.asked >= 2  # asked again before giving up
    response = await on_temporal_error(None, RPCError("Timeout expired", RPCStatusCode.DEADLINE_EXCEEDED, b""))  # type: ignore[arg-type]
    assert (response.status_code, response.headers["retry-after"]) == (503, "1")
    assert b"the Temporal server is busy or unreachable: Timeout expired; try again" in response.body
    later, _ = slow_gateway(failures=2)
    assert await later.patiently(lambda: later.log_total("t1"), Patience("t1", 5)) == 7


class FullQueue:
    """A client whose conversation refuses every update: too many in flight."""

    def __init__(self) -> None:
        self.updates = 0

    def get_workflow_handle(self, workflow_id: str) -> FullQueue:
        return self

    async def start_update(self, *args: object, **kwargs: object) -> int:
        self.updates += 1
        raise RPCError("too many outstanding updates", RPCStatusCode.RESOURCE_EXHAUSTED, b"")


async def test_a_turn_and_the_checks_before_it_share_one_busy_budget() -> None:
    """A request that spent its `busy_seconds` waiting out the server before the turn is
    refused at once (429), not given the whole budget again for the turn itself."""
    gateway, log = slow_gateway(failures=1_000)
    gateway.exchanges.client = full = FullQueue()  # type: ignore[assignment]
    patience = Patience("t1", 0.3)
    with pytest.raises(ConversationBusy, match=r"did not take the turn within 0.3 s"):
        await gateway.patiently(lambda: gateway.log_total("t1"), patience)
    log.failures = 0  # the server answers the query now, and the update is refused
    with pytest.raises(ConversationBusy, match=r"did not take the turn within 0.3 s: too many"):
        await gateway.accept_turn("t1", "hi", None, None, patience)
    assert full.updates == 1  # sent once: the budget was already spent


@pytest.mark.slow  # over a second: out of the quick loop
async def test_turns_sent_at_once_to_a_raw_start_replay_and_its_labels_are_asked_by_activity(
        client: Client, task_queue: str) -> None:
    """Started as `client.start_workflow` does (no labels), a conversation asks the worker which
    labels exist with a regular activity, so the 30 turns that race its first workflow tasks
    never meet a local activity's resolution (temporalio 1.35 could replay those out of order)."""
    from durable_teams.client.send import submit_turn
    from durable_teams.workflows.state import ConversationInput

    model = GatedModel()
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name=TEAM.spec.name, single_turn=False),
            id=f"raw-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        accepted = await asyncio.gather(*(submit_turn(client, handle.id, f"m{n}", turn_id=f"t{n}")
                                          for n in range(30)))
        model.gate.set()
        replies = await asyncio.wait_for(asyncio.gather(*(turn.reply() for turn in accepted)), 120)
        history = await handle.fetch_history()
    assert sorted(r.turn for r in replies) == list(range(1, 31))
    scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                 if e.HasField("activity_task_scheduled_event_attributes")]
    assert scheduled[:2] == ["resolve_team", "available_labels"] and scheduled.count("available_labels") == 1
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, str(result.replay_failure)
