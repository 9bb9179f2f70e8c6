"""What a streamed Responses request reads per step of its turn (durable_teams/gateway/doors/
responses/state.py, `views`): the thread's log once a step, its status at the start and once
more when the turn's outcome (its reply, a question) has come, not at every step; and when the
outcome cannot be waited for (a worker of an earlier release), the status at every step as
before. A stand-in thread counts the reads."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from durable_teams.client.turn_outcome import OutcomeUnavailable
from durable_teams.gateway.doors.responses import state
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.workflows.conversation_reads import ConversationStatus, LogPage, TurnOutcome
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.state import Question, TurnReply

pytestmark = pytest.mark.pure

STEPS = 12


class Thread:
    """A running turn's thread: its log grows a step at a time; `status` and `page` count."""

    def __init__(self) -> None:
        self.log = [Message(role="user", content="question")]
        self.reply: TurnReply | None = None
        self.pending: list[Question] = []
        self.reads: Counter[str] = Counter()
        self.meanwhile: list[Callable[[], None]] = []
        self.client = self  # a handle is made, never asked (the turn has no earlier reply)
        self.poll_seconds = 0.01

    def get_workflow_handle(self, thread: str) -> Thread:
        return self

    async def status(self, thread: str) -> ConversationStatus:
        self.reads["status"] += 1
        return ConversationStatus(active_agent="a", turns=1, model_calls=0, pending=list(self.pending),
                                  queued_turns=0, last_reply=self.reply, closed=False, history_length=len(self.log))

    async def page(self, thread: str, start: int, limit: int = 200) -> LogPage:
        self.reads["page"] += 1
        if self.meanwhile:  # what happens in the thread while the page is read
            self.meanwhile.pop()()
        return LogPage(start=start, messages=self.log[start:start + limit], total=len(self.log),
                       history_length=len(self.log))


async def next_view(views: Any) -> Any:
    """The stream's next view (a read it does not make in time fails the test, not hangs it)."""
    return await asyncio.wait_for(anext(views), 10)


class Watch:
    """A `StepWatch` the test drives: `ready` set at each step."""

    def __init__(self, client: Any, workflow_id: str) -> None:
        self.ready = asyncio.Event()

    async def run(self) -> None:
        await asyncio.Event().wait()

    def read(self, history_length: int | None) -> None:
        pass


async def stream(monkeypatch: pytest.MonkeyPatch, outcome: asyncio.Future[TurnOutcome]) -> Thread:
    """Stream a turn of STEPS steps to its reply, the outcome given by `outcome`."""
    thread = Thread()
    watches: list[Watch] = []

    def watch(client: Any, workflow_id: str) -> Watch:
        watches.append(Watch(client, workflow_id))
        return watches[-1]

    async def wait_outcome(client: Any, workflow_id: str, number: int, **_: Any) -> TurnOutcome:
        return await asyncio.shield(outcome)  # a stream that stops cancels its own wait only

    monkeypatch.setattr(state, "StepWatch", watch)
    monkeypatch.setattr(state, "wait_outcome", wait_outcome)
    views: Any = state.views(thread, ResponseRef("t", 1, 0))  # type: ignore[arg-type]
    shown = [await next_view(views)]
    pulled = asyncio.ensure_future(anext(views))  # a reader pulls at once: nothing is read until a step
    for _ in range(100):
        await asyncio.sleep(0)  # the event loop runs whatever is ready, as often as it likes
    assert not pulled.done() and thread.reads["page"] == 1, thread.reads
    pulled.cancel()
    views = state.views(thread, ResponseRef("t", 1, 0))  # type: ignore[arg-type]
    thread.reads.clear()
    shown = [await next_view(views)]
    for step in range(STEPS):
        thread.log.append(Message(role="assistant", content=f"step {step}", name="a", agent_run=1))
        watches[-1].ready.set()
        shown.append(await next_view(views))
    thread.reply = TurnReply(turn=1, text="answer", agent="a")
    thread.log.append(Message(role="assistant", content="answer", name="a"))
    if not outcome.done():
        outcome.set_result(TurnOutcome(turn=1, reply=thread.reply))  # the wait returns: no step watched
    else:
        watches[-1].ready.set()
    shown.append(await next_view(views))
    assert [v.ended for v in shown] == [False] * (STEPS + 1) + [True]
    assert shown[-1].text == "answer"
    await views.aclose()
    return thread


async def test_a_streamed_response_reads_the_log_once_a_step_and_the_status_at_its_start_and_outcome(
        monkeypatch: pytest.MonkeyPatch) -> None:
    thread = await stream(monkeypatch, asyncio.get_running_loop().create_future())
    assert thread.reads == {"page": STEPS + 2, "status": 2}


async def test_without_the_outcome_wait_the_status_is_read_at_every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    unavailable: asyncio.Future[TurnOutcome] = asyncio.get_running_loop().create_future()
    unavailable.set_exception(OutcomeUnavailable("an earlier worker"))
    thread = await stream(monkeypatch, unavailable)
    assert thread.reads == {"page": STEPS + 2, "status": STEPS + 2}


async def test_a_question_asked_meanwhile_is_read_once_its_outcome_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The outcome wait names the questions pending at the first read: a question asked later
    ends it, and the status is read again (the response stops at its question)."""
    thread = Thread()
    outcome: asyncio.Future[TurnOutcome] = asyncio.get_running_loop().create_future()
    named: list[set[str]] = []

    async def wait_outcome(client: Any, workflow_id: str, number: int, *, seen: set[str]) -> TurnOutcome:
        named.append(set(seen))
        return await asyncio.shield(outcome)  # a stream that stops cancels its own wait only
    monkeypatch.setitem(state._approval_tools, ("t", "a"), (frozenset(), frozenset()))  # the team's, known
    monkeypatch.setattr(state, "StepWatch", Watch)
    monkeypatch.setattr(state, "wait_outcome", wait_outcome)
    asked = Question(question_id="q1", text="which?", agent="a", asked_at=datetime(2026, 1, 1, tzinfo=UTC),
                     timeout_seconds=60, tool="ask_human", tool_call_id="c1")
    views: Any = state.views(thread, ResponseRef("t", 1, 0))  # type: ignore[arg-type]
    assert not (await next_view(views)).ended
    thread.log.append(Message(role="assistant", name="a", tool_calls=[
        ToolCall(id="c1", name="ask_human", arguments='{"question": "which?"}')]))
    thread.pending = [asked]
    outcome.set_result(TurnOutcome(turn=1, question=asked))
    view = await next_view(views)
    assert view.ended and view.stop is not None and view.stop.call.id == "c1"
    assert named == [set()]  # no question pending at the first read
    assert thread.reads == {"page": 2, "status": 2}
    await views.aclose()


async def test_a_reply_that_comes_during_a_read_of_the_log_alone_is_read_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's last step and its reply land while a step's log is read (with the status of
    the start): no step follows to wake a read, so the stream reads with the status at once."""
    thread = Thread()
    outcome: asyncio.Future[TurnOutcome] = asyncio.get_running_loop().create_future()

    async def wait_outcome(client: Any, workflow_id: str, number: int, **_: Any) -> TurnOutcome:
        return await asyncio.shield(outcome)
    watches: list[Watch] = []
    monkeypatch.setattr(state, "StepWatch", lambda *given: watches.append(Watch(*given)) or watches[-1])
    monkeypatch.setattr(state, "wait_outcome", wait_outcome)
    views: Any = state.views(thread, ResponseRef("t", 1, 0))  # type: ignore[arg-type]
    assert not (await next_view(views)).ended

    def replied() -> None:
        thread.log.append(Message(role="assistant", content="answer", name="a"))
        thread.reply = TurnReply(turn=1, text="answer", agent="a")
        outcome.set_result(TurnOutcome(turn=1, reply=thread.reply))
    thread.meanwhile.append(replied)
    thread.log.append(Message(role="assistant", content="step", name="a", agent_run=1))
    watches[-1].ready.set()  # the step: its read finds the reply's step too, with no reply in its status
    assert not (await next_view(views)).ended
    last = await next_view(views)  # no step is watched after it
    assert last.ended and last.text == "answer"
    assert thread.reads == {"page": 3, "status": 2}
    await views.aclose()
