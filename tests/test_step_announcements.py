"""The worker announces each message a conversation appends to its log, once, when it runs for
real (durable_teams/workflows/log_outbox.py, durable_teams/worker/log_announcer.py): a replay
announces nothing, a failed activation nothing; and a stream that finds a gap in the
announcements reads the log once to fill it (durable_teams/gateway/core/turn_stream.py).
Across processes over Redis: tests/test_stream_announced.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxRestrictions

from durable_teams.gateway.core.step_news import StepFeed, StepNews
from durable_teams.gateway.core.turn_stream import TurnStream
from durable_teams.live.hub import Live, LocalHub, Logged
from durable_teams.worker.log_announcer import LogAnnouncer
from durable_teams.worker.sandbox_runner import ContextFreeSandboxRunner
from durable_teams.workflows import log_outbox, transcript
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

pytestmark = pytest.mark.pure

HISTORY = Path(__file__).parent / "histories" / "faang.json"


async def test_a_replayed_conversation_announces_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """faang.json's turn replayed by a worker's runner: every message is appended again (the
    watcher is told of each), none is announced, as they were when first appended."""
    appended: list[int] = []
    monkeypatch.setattr(transcript, "APPEND_WATCHERS", [*transcript.APPEND_WATCHERS, lambda i, m: appended.append(i)])
    hub = LocalHub()
    runner = ContextFreeSandboxRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("durable_teams.workflows"),
        announcer=LogAnnouncer(hub))
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter, workflow_runner=runner)
    history = WorkflowHistory.from_json("faang", HISTORY.read_text())
    recorded = set(log_outbox._PENDING)  # runs of other workers in this process
    async with hub.subscribe_steps("faang") as steps:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
        await asyncio.sleep(0)  # anything handed to the loop is delivered by now
        assert result.replay_failure is None
        assert len(appended) > 20  # the FAANG turn's messages, appended again
        assert steps.empty()
    assert set(log_outbox._PENDING) <= recorded  # the replay's instance was evicted: nothing kept of it


class Instance:
    """A workflow instance whose activation appends `messages` (recorded as the workflow's
    appends are) and completes with `completion`."""

    def __init__(self, run_id: str, messages: list[Message], completion: WorkflowActivationCompletion) -> None:
        self.run_id, self.messages, self.completion = run_id, messages, completion

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        for message in self.messages:
            log_outbox._PENDING[self.run_id].append((len(self.messages), message))
        return self.completion


def completed(failed: bool) -> WorkflowActivationCompletion:
    completion = WorkflowActivationCompletion(run_id="r1")
    if failed:
        completion.failed.failure.message = "the workflow raised"
    else:
        completion.successful.SetInParent()
    return completion


async def announced_by(completion: WorkflowActivationCompletion, evict: bool = False) -> list[Live]:
    hub = LocalHub()
    info: Any = SimpleNamespace(run_id="r1", workflow_id="w1")
    message = Message(role="assistant", content="step", name="a")
    async with hub.subscribe_steps("w1") as steps:
        instance = LogAnnouncer(hub).wrap(Instance("r1", [message], completion), info)  # type: ignore[arg-type]
        act = WorkflowActivation(run_id="r1")
        if evict:
            act.jobs.add().remove_from_cache.message = "evicted"
        instance.activate(act)
        await asyncio.sleep(0)  # the loop publishes what the activation handed it
        found = []
        while not steps.empty():
            found.append(steps.get_nowait())
    return found


async def test_a_successful_activation_announces_what_it_appended_and_a_failed_one_nothing() -> None:
    announced = await announced_by(completed(failed=False))
    assert announced == [Logged("w1", "r1", 1, {**Message(role="assistant", content="step", name="a")
                                                 .model_dump(mode="json")})]
    assert await announced_by(completed(failed=True)) == []
    assert log_outbox.take("r1") == []  # the failed one's appends were dropped, not kept for later
    await announced_by(completed(failed=False), evict=True)
    assert "r1" not in log_outbox._PENDING  # evicted: no longer recorded


class Log:
    """A thread's log as a stream reads it: `reads`, where each read started."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.reads: list[int] = []
        self.client: Any = None
        self.poll_seconds, self.quiet_seconds = 0.01, 30.0

    async def _page(self, thread: str, start: int, limit: int = 200) -> LogPage:
        self.reads.append(start)
        return LogPage(start=start, messages=self.messages[start:start + limit], total=len(self.messages))


async def test_a_gap_in_the_announcements_is_filled_by_one_read_and_the_end_confirmed_by_another() -> None:
    log = Log([Message(role="user", content="question"),
               Message(role="assistant", content="thinking", name="a", agent_run=1),
               Message(role="assistant", content="answer", name="a")])
    queue: asyncio.Queue[Live] = asyncio.Queue()
    for at in (0, 2):  # the announcement of message 1 was lost
        queue.put_nowait(Logged("t", "r1", at, log.messages[at].model_dump(mode="json")))
    turn: asyncio.Future[TurnReply] = asyncio.get_running_loop().create_future()
    news = StepNews(log.client, "t", StepFeed(0), queue, log.poll_seconds, log.quiet_seconds)
    stream = TurnStream(lambda start: log._page("t", start), news, turn)
    events = stream.events()
    shown = [await asyncio.wait_for(anext(events), 5) for _ in range(3)]
    assert [(e["index"], e["text"]) for e in shown] == [(0, "question"), (1, "thinking"), (2, "answer")]
    assert log.reads == [1]  # the gap, read from the first message not announced
    turn.set_result(TurnReply(turn=1, text="answer", agent="a"))
    rest = [e async for e in events]
    assert [e["type"] for e in rest] == ["done"]  # nothing shown twice
    assert log.reads == [1, 0]  # the end: read from the first message shown from an announcement
    assert stream.differing == []



class Watch:
    """A `StepWatch` that never sees a step (the test counts the ones made)."""

    made = 0

    def __init__(self, client: Any, workflow_id: str) -> None:
        Watch.made += 1
        self.ready = asyncio.Event()

    async def run(self) -> None:
        await asyncio.Event().wait()

    def read(self, history_length: int | None) -> None:
        pass


async def test_quiet_announcements_fall_back_to_reading_the_log() -> None:
    """The announcement of message 1 is lost and none follows: after `quiet_seconds` the
    stream reads the log (and watches the history as before), so the step is not missed."""
    log = Log([Message(role="user", content="question"), Message(role="assistant", content="answer", name="a")])
    log.quiet_seconds = 0.05
    queue: asyncio.Queue[Live] = asyncio.Queue()
    queue.put_nowait(Logged("t", "r1", 0, log.messages[0].model_dump(mode="json")))
    news = StepNews(log.client, "t", StepFeed(0), queue, log.poll_seconds, log.quiet_seconds, watching_with=Watch)
    turn: asyncio.Future[TurnReply] = asyncio.get_running_loop().create_future()
    events = TurnStream(lambda start: log._page("t", start), news, turn).events()
    Watch.made = 0
    assert (await asyncio.wait_for(anext(events), 5))["text"] == "question"
    assert log.reads == [] and Watch.made == 0  # announced: no read, no watch
    assert (await asyncio.wait_for(anext(events), 5))["text"] == "answer"
    assert log.reads == [1] and Watch.made == 1  # quiet: read, and watched from then on
    queue.put_nowait(Logged("t", "r1", 2, Message(role="user", content="next").model_dump(mode="json")))
    assert (await asyncio.wait_for(anext(events), 5))["text"] == "next"
    assert news.watch is None  # announced again: the watch stopped
    await events.aclose()


def test_a_new_run_announcing_an_index_already_shown_sends_the_stream_back_to_reading() -> None:
    """A rewind (a reset: a new run of the thread) appends again at indexes a stream has shown:
    announcements no longer say where the log stands. Continued as new, indexes go on: no change."""
    said = Message(role="assistant", content="step", name="a").model_dump(mode="json")
    feed = StepFeed(0)
    for at in range(3):
        feed.hear(Logged("t", "r1", at, said))
    assert len(feed.ready()) == 3 and not feed.replaced
    feed.hear(Logged("t", "r2", 3, said))  # continued as new
    assert len(feed.ready()) == 1 and not feed.replaced
    feed.hear(Logged("t", "r3", 2, said))  # reset to before index 2
    assert feed.replaced and feed.ready() == []
