"""Failover under load: two worker processes serve one task queue; conversations run a tool,
then wait for a person to approve an order (a third are denied). The first half of the answers
goes out; once every order approved so far is applied, the worker holding most conversations is
killed with SIGKILL while it holds the orders it applied unreported, and the rest are answered
(half through the durable signal, half through the update the CLI uses). Every conversation
must complete with its exact answer, every approved order must be applied exactly once, no
denied one ever. How long the survivor took to pick up the orphaned work is printed, not
asserted.

Failover waits on timeouts, small here so the test takes seconds, not minutes: the sticky
queue's schedule-to-start timeout (the next workflow task of a conversation the dead worker
held), a model call's and a tool's attempt timeout (a call that was running there) and
`ModelCalls.worker_queue_seconds` (a model call waiting on the dead worker's own queue). A
workflow task that was running there waits out the workflow task timeout; it stays at its
default (10 s) because on a loaded machine a shorter one times out live workers' tasks too.
The scenario (the team, its scripted model, the recorded side effects) is the benchmark's:
`python -m bench.scale failover`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import TimeoutType

from bench import procs
from bench.failover import (
    SIDE_EFFECTS,
    expected_answer,
    failover_team,
    hold_worker,
    holder,
    pickup_delay,
    read_effects,
    release,
)
from durable_teams.client.send import send_reply
from durable_teams.worker.settings import STICKY_ENV, sticky_timeout
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import (
    ConversationInput,
    ConversationResult,
    HumanReply,
    Question,
)

from .waiting import NotYet, until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

COUNT = 16
STICKY_SECONDS = 1.0
TEAM = failover_team(model_seconds=3.0, tool_seconds=2.0, worker_queue_seconds=1.0)
WAIT = 60.0
"""The bound of every wait: far above what each takes (seconds), even on a loaded machine."""


@pytest.fixture(params=[True, False], ids=["eager", "no-eager"])
def eager(request: pytest.FixtureRequest) -> bool:
    """Eager activity dispatch on (the dev server's default: a tool or model call runs on the
    worker whose workflow task scheduled it) or off (a self-hosted server's default: model calls
    also take the path through a worker's own queue, workflows/placement.py)."""
    return bool(request.param)


@pytest_asyncio.fixture
async def two_workers(client: Client, task_queue: str, tmp_path: Path, eager: bool
                      ) -> AsyncIterator[list[procs.Proc]]:
    """Two worker processes (bench/worker_proc.py) on `task_queue`, recording side effects in
    `tmp_path`; both are gone when the test ends, whatever happened to it."""
    address = client.service_client.config.target_host
    flags = ("--sticky-seconds", str(STICKY_SECONDS), *([] if eager else ["--no-eager"]))
    started = await asyncio.gather(*(
        procs.worker(address, task_queue, *flags, env={SIDE_EFFECTS: str(tmp_path)},
                     identity=f"failover-{name}-{uuid.uuid4().hex[:4]}") for name in "ab"),
        return_exceptions=True)
    alive = [p for p in started if isinstance(p, procs.Proc)]
    try:
        for p in started:
            if isinstance(p, BaseException):
                raise p
        yield alive
    finally:
        release(tmp_path)  # a test that failed early may have left a worker held
        for p in alive:
            try:
                await p.stop(within=30)
            except TimeoutError:  # stop() killed it
                pass


async def approvals(handles: list[WorkflowHandle]) -> dict[str, Question]:
    """The approval each conversation waits on, once all of them wait (polled: a client gets
    no event when a question is asked)."""
    found: dict[str, Question] = {}

    async def all_asked() -> bool:
        waiting = [h for h in handles if h.id not in found]
        for h, pending in zip(waiting, await asyncio.gather(
                *(h.query(TeamWorkflow.pending_questions) for h in waiting)), strict=True):
            if pending:
                found[h.id] = pending[0]
        if len(found) < len(handles):
            raise NotYet(f"asking nothing yet: {[h.id for h in handles if h.id not in found]}")
        return True
    await until(all_asked, f"all {len(handles)} conversations asking for approval", WAIT, every=0.1)
    return found


async def results(handles: list[WorkflowHandle]) -> list[ConversationResult]:
    """Every conversation's result; if some do not finish in time, a failure that says where each
    of those stands (its status, pending activities and last events)."""
    try:
        return list(await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), WAIT))
    except TimeoutError:
        pass
    report = []
    for h in handles:
        described = await h.describe()
        if described.status is not None and described.status.name != "RUNNING":
            continue
        pending = [f"{a.activity_type.name} attempt {a.attempt} on {a.last_worker_identity or '-'}"
                   for a in described.raw_description.pending_activities]
        events = [f"{EventType.Name(e.event_type)[len('EVENT_TYPE_'):]}"
                  async for e in h.fetch_history_events()][-5:]
        report.append(f"{h.id}: pending activities {pending}, last events {events}")
    raise AssertionError(f"{len(report)} conversations did not finish within {WAIT} s:\n" + "\n".join(report))


async def timed_out_on_worker_queues(handle: WorkflowHandle) -> int:
    """Model calls that waited in vain on a worker's own queue and moved to the shared one."""
    return len([e async for e in handle.fetch_history_events()
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT
                and e.activity_task_timed_out_event_attributes.failure.timeout_failure_info.timeout_type
                == TimeoutType.SCHEDULE_TO_START.value])


async def applied_all(folder: Path, orders: set[str]) -> None:
    """Wait until each of `orders` was applied (the victim's then wait to report it)."""
    async def applied() -> bool:
        done, attempts = read_effects(folder)
        if not orders <= set(done):
            raise NotYet(f"not applied: {sorted(orders - set(done))}, attempts: {attempts}")
        return True
    await until(applied, "every order applied", WAIT)


class Plan:
    """Who holds which waiting conversation, and what the test does with them. The victim: the
    worker holding most of them. Each worker's conversations are split between the answers given
    before the kill and those given after it, and a third of each worker's are denied."""

    def __init__(self, handles: list[WorkflowHandle], held: dict[str, str], workers: list[procs.Proc]) -> None:
        mine = {p.identity: [h for h in handles if held[h.id] == p.identity] for p in workers}
        assert sum(map(len, mine.values())) == len(handles), f"workers other than ours ran tasks: {held}"
        self.victim, self.survivor = sorted(workers, key=lambda p: -len(mine[p.identity]))
        self.held_by_victim = len(mine[self.victim.identity])
        self.first = [h for p in workers for h in mine[p.identity][0::2]]
        self.second = [h for p in workers for h in mine[p.identity][1::2]]
        self.approved = {h.id: k % 3 != 2 for p in workers for k, h in enumerate(mine[p.identity])}


async def test_kill9_of_a_worker_under_load_loses_and_repeats_nothing(
    client: Client, task_queue: str, tmp_path: Path, two_workers: list[procs.Proc]
) -> None:
    handles = [await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="apply it", set_search_attributes=False),
        id=f"order-{i}-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        for i in range(COUNT)]
    questions = await approvals(handles)
    plan = Plan(handles, {h.id: await holder(h) for h in handles}, two_workers)
    victim, approved = plan.victim, plan.approved

    async def answer(h: WorkflowHandle, through_update: bool) -> None:
        qid = questions[h.id].question_id
        if through_update:  # as the CLI and the inbox do: returns once the workflow took it
            await send_reply(client, h.id, qid, approved=approved[h.id])
        else:  # the durable signal
            await h.signal(TeamWorkflow.human_reply, HumanReply(question_id=qid, approved=approved[h.id]))

    # The moment: every order approved so far is applied, the victim holds those it applied
    # unreported (so the server must retry them elsewhere), and every other conversation
    # answered so far has finished (a workflow task the victim was running at the kill would
    # wait out the workflow task timeout, 10 s: Temporal's own mechanism, not tested here).
    hold_worker(tmp_path, victim.proc.pid)
    for h in plan.first:
        await answer(h, through_update=False)
    await applied_all(tmp_path, {h.id for h in plan.first if approved[h.id]})
    held = {order for order, pid in read_effects(tmp_path)[1] if pid == victim.proc.pid}
    await results([h for h in plan.first if h.id not in held])
    victim.kill9()
    killed_at = time.time()
    assert await asyncio.wait_for(victim.proc.wait(), WAIT) == -9
    release(tmp_path)
    # half through the update, which waits for a live worker to take the conversation over
    await asyncio.wait_for(asyncio.gather(*(answer(h, k % 2 == 1) for k, h in enumerate(plan.second))), WAIT)
    done = await results(handles)

    assert {h.id: (r.status, r.answer) for h, r in zip(handles, done, strict=True)} == {
        h.id: ("completed", expected_answer(h.id, approved[h.id])) for h in handles}
    applied, attempts = read_effects(tmp_path)
    assert applied == Counter({order: 1 for order, yes in approved.items() if yes})
    assert not [order for order, _ in attempts if not approved[order]]  # a denied order never ran
    await report(plan, handles, attempts, killed_at)


async def report(plan: Plan, handles: list[WorkflowHandle], attempts: list[tuple[str, int]],
                 killed_at: float) -> None:
    """How long the survivor took to pick up the orphaned work, and what it took over (printed)."""
    victim = plan.victim
    delays = [d for d in [await pickup_delay(h, victim.identity, killed_at) for h in handles] if d is not None]
    assert delays, f"the victim held {plan.held_by_victim} conversations, yet none moved"
    orphaned = {order for order, pid in attempts if pid == victim.proc.pid}
    retried = {order for order, pid in attempts if pid == plan.survivor.proc.pid} & orphaned
    moved = sum([await timed_out_on_worker_queues(h) for h in handles])
    print(f"\nfailover: killed {victim.identity}, which held {plan.held_by_victim} of {len(handles)} "
          f"waiting conversations; the survivor picked up {len(delays)} conversations after median "
          f"{statistics.median(delays):.2f} s, max {max(delays):.2f} s; {len(orphaned)} orders the victim "
          f"applied and never reported, {len(retried)} of them retried by the survivor (and not "
          f"applied again); {moved} model calls moved off a worker's own queue")


def test_the_worker_takes_its_sticky_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`durable-teams worker` waits `$DURABLE_TEAMS_STICKY_ENV` (default 10 s) for a
    conversation it holds before another worker may take it; a bad value is one clear line."""
    monkeypatch.delenv(STICKY_ENV, raising=False)
    assert sticky_timeout() == timedelta(seconds=10)
    monkeypatch.setenv(STICKY_ENV, "1.5")
    assert sticky_timeout() == timedelta(seconds=1.5)
    for bad in ("0", "-2", "soon", "nan", "inf"):
        monkeypatch.setenv(STICKY_ENV, bad)
        with pytest.raises(SystemExit, match=f"{STICKY_ENV} must be a positive number of seconds, not '{bad}'"):
            sticky_timeout()
    env = {**os.environ, STICKY_ENV: "soon", "TEMPORAL_ADDRESS": "127.0.0.1:1"}
    out = subprocess.run([sys.executable, "worker.py"], cwd=Path(__file__).resolve().parent.parent,
                         env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr.strip()) == (
        1, "", f"durable-teams worker: {STICKY_ENV} must be a positive number of seconds, not 'soon'")
