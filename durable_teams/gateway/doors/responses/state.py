"""Reading a response from its thread (durable_teams/gateway/doors/responses/from_log.py says what one
is): its view, the thread's latest response, and waiting for one to end. Nothing is kept in
the gateway: every answer is read from the workflow (queries), so any gateway process, started
at any time, gives the same one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from temporalio.client import WorkflowQueryFailedError

from durable_teams.client.step_watch import StepWatch
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.gateway.core.step_news import StepFeed, StepNews
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import anchors as anchors
from durable_teams.gateway.doors.responses.from_log import (
    ResponseRef,
    UnknownResponse,
    View,
    is_turn_start,
    view_of,
)
from durable_teams.live.hub import Live
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus, WaitingTools
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

MAX_APPROVAL_CACHE = 4096
_approval_tools: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
"""(thread, agent) -> the agent's tools that wait for approval, and those that pause at a
breakpoint: a cache of what the team fixes (a thread's team does not change), so no state."""


async def _agent_query(gw: Gateway, thread: str, query: Callable[..., Any], args: list[object]) -> Any:
    try:
        return await gw.client.get_workflow_handle(thread).query(query, args=args)
    except WorkflowQueryFailedError:  # not an agent of the team (a nested team's), or an older worker
        return None


async def approval_tools(gw: Gateway, thread: str, agents: set[str]) -> tuple[set[str], set[str]]:
    """The tools of `agents` that wait for a person, as the workflow's team says: those that
    need approval, and those that pause at a breakpoint (before or after they run)."""
    approvals, breaks = set[str](), set[str]()
    for agent in sorted(agents):
        key = (thread, agent)
        if key not in _approval_tools:
            waiting = await _agent_query(gw, thread, TeamWorkflow.waiting_tools, [agent]) or WaitingTools()
            if len(_approval_tools) >= MAX_APPROVAL_CACHE:
                _approval_tools.clear()
            _approval_tools[key] = frozenset(waiting.approval), frozenset(waiting.breakpoint)
        approvals |= _approval_tools[key][0]
        breaks |= _approval_tools[key][1]
    return approvals, breaks


async def read(gw: Gateway, ref: ResponseRef, deleted_too: bool = False,
               anchored: bool = False) -> tuple[View, ConversationStatus]:
    """The response `ref` as its thread has it now, with the thread's status. A deleted one
    (`DELETE /v1/responses/{id}`) is unknown, unless `deleted_too` (walking the thread); so is
    an id the thread never gave (durable_teams/gateway/responses_anchors.py), unless
    `anchored` (a ref read before, or made from one)."""
    status = await gw.status(ref.thread)  # read before the log: a reply it has has its log complete
    replies = await replies_of(gw, ref, status, deleted_too)
    messages, _ = await stretch_read(gw, ref)
    return await view_as_of(gw, ref, status, replies, messages, anchored), status


async def replies_of(gw: Gateway, ref: ResponseRef, status: ConversationStatus,
                     deleted_too: bool = False) -> list[TurnReply]:
    """The reply of `ref`'s turn, if it has one, as of `status` (an unknown or deleted `ref`:
    `UnknownResponse`)."""
    if not 1 <= ref.turn <= status.turns:  # an id no request of this thread was given
        raise UnknownResponse(f"no response {ref.id!r}")
    if not deleted_too and ref.key in status.hidden_steps:
        raise UnknownResponse(f"no response {ref.id!r} (deleted)")
    last = status.last_reply  # the reply of the highest turn answered
    if last is not None and last.turn == ref.turn:
        return [last]
    if last is None or last.turn < ref.turn:
        return []  # no turn this high is answered: not this one either (a running turn's every read)
    replies: list[TurnReply] = await gw.client.get_workflow_handle(ref.thread).query(
        TeamWorkflow.turn_replies, [ref.turn])
    return replies


async def view_as_of(gw: Gateway, ref: ResponseRef, status: ConversationStatus, replies: list[TurnReply],
                     messages: list[Message], anchored: bool = False) -> View:
    """Response `ref` from its stretch of the log (`messages`, from `ref.start`) and `status`."""
    tools, breaks = await approval_tools(gw, ref.thread, agents_asking(messages))
    if not anchored:
        await check_anchor(gw, ref, messages)
    reply = replies[0] if replies else None
    if reply is None and status.last_reply is not None and status.last_reply.turn > ref.turn:
        reply = forgotten_reply(ref, messages)  # turns end in order: this one ended long ago
    return view_of(ref, messages, reply, status.pending, tools, breaks)


async def stretch(gw: Gateway, ref: ResponseRef) -> list[Message]:
    return (await stretch_read(gw, ref))[0]


async def stretch_read(gw: Gateway, ref: ResponseRef) -> tuple[list[Message], int | None]:
    """The log from `ref.start`, as far as the next turn's message (or the log's end), and the
    history length its reading reflects at least (its first page's)."""
    messages: list[Message] = []
    index = ref.start
    history_length: int | None = None
    while True:
        page = await gw.page(ref.thread, index)
        if history_length is None:
            history_length = page.history_length
        if ref.start > page.total:
            raise UnknownResponse(f"no response {ref.id!r}")
        messages.extend(page.messages)
        index += len(page.messages)
        turns = sum(map(is_turn_start, messages))
        if index >= page.total or not page.messages or turns > (0 if ref.step else 1):
            return messages, history_length  # the whole log, or as far as the next turn: this response ended before it


def agents_asking(messages: list[Message]) -> set[str]:
    return {m.name for m in messages if m.role == "assistant" and m.tool_calls and m.name}


async def check_anchor(gw: Gateway, ref: ResponseRef, messages: list[Message], page_size: int = 50) -> None:
    """`UnknownResponse` unless `ref` is an id its thread gave (`messages`: its log from
    `ref.start`); an answer's response reads the log back to its turn's message."""
    if ref.step == 0:
        anchors.check_turn_start(ref, messages)
        return
    stretch: list[Message] = []
    end = ref.start
    while end > 0 and not (stretch and is_turn_start(stretch[0])):
        start = max(0, end - page_size)
        page = await gw.page(ref.thread, start, end - start)
        stretch = page.messages + stretch
        end = start
        turn_at = next((i for i in range(len(stretch) - 1, -1, -1) if is_turn_start(stretch[i])), None)
        if turn_at is not None:
            stretch = stretch[turn_at:]
    tools, breaks = await approval_tools(gw, ref.thread, agents_asking(stretch))
    anchors.check_step(ref, stretch, tools, breaks)


def forgotten_reply(ref: ResponseRef, messages: list[Message]) -> TurnReply:
    """The reply of a turn the workflow no longer keeps (it keeps the latest 200): the last
    answer of the shared conversation in the turn's stretch of the log."""
    stretch = messages[:next((i for i, m in enumerate(messages) if i and is_turn_start(m)), len(messages))]
    said = next((m for m in reversed(stretch) if m.role == "assistant" and m.agent_run == 0
                 and not m.tool_calls), None)
    return TurnReply(turn=ref.turn, text=(said.content or "") if said else "", agent=said.name or "" if said else "")


def successor(view: View, status: ConversationStatus) -> ResponseRef | None:
    """The response that came after `view` in its thread, if one did."""
    ref = view.ref
    if not view.ended or view.end is None:
        return None
    if view.stop is not None:
        waiting = any(q.tool_call_id == view.stop.call.id for q in status.pending)
        return None if waiting else ResponseRef(ref.thread, ref.turn, view.end, ref.step + 1)
    if status.turns > ref.turn:
        return ResponseRef(ref.thread, ref.turn + 1, view.end, 0)
    return None


async def latest(gw: Gateway, ref: ResponseRef,
                 deleted_too: bool = False) -> tuple[View, ConversationStatus, ResponseRef | None]:
    """The thread's latest response, walked to from `ref` (deleted or not, with `deleted_too`),
    and the one right after `ref` (responses deleted on the way are walked through)."""
    view, status = await read(gw, ref, deleted_too)
    first: ResponseRef | None = None
    for _ in range(10_000):
        after = successor(view, status)
        if after is None:
            break
        first = first or after
        view, status = await read(gw, after, deleted_too=True, anchored=True)
    return view, status, first


async def views(gw: Gateway, ref: ResponseRef, steps: asyncio.Queue[Live] | None = None) -> AsyncIterator[View]:
    """The response each time it may have changed, until it has ended: at each step the worker
    announces on `steps` (the thread's `subscribe_steps` queue), from the announced messages
    without a read; without announcements (none given, none yet, or quiet for a while:
    durable_teams/gateway/core/step_news.py) read again when a step of the thread is scheduled
    or completes unread (a `StepWatch`, one long poll of its history; no timer). The thread's
    status is read first and again, with the log, only once its turn's outcome (`turn_outcome`:
    its reply, or a question) has come: until then what a response shows of it is the same."""
    news = StepNews(gw.client, ref.thread, StepFeed(ref.start), steps or asyncio.Queue(), gw.poll_seconds,
                    gw.log.quiet_seconds if steps is not None else 0, watching_with=StepWatch)
    outcome: asyncio.Future[bool] | None = None
    status: ConversationStatus | None = None
    messages: list[Message] = []
    read = news.start()
    try:
        while True:
            fresh = status is None or (outcome is not None and outcome.done())
            announced = [] if fresh or read else news.feed.ready()
            if not (fresh or read or announced):  # news with no step in it (a delta)
                read = await news.next(*_waiting(outcome))
                continue
            status = await gw.status(ref.thread) if fresh or status is None else status
            replies = await replies_of(gw, ref, status)
            if fresh or read:
                messages = await _stretch_for(gw, ref, news, status, fresh)
            messages = messages + announced  # the steps announced since
            view = await view_as_of(gw, ref, status, replies, messages, anchored=outcome is not None)
            if outcome is None:  # the first read: the turn's outcome awaited from there
                outcome = asyncio.ensure_future(_outcome(gw, ref, status))  # it never raises
            yield view
            if view.ended:
                return
            if outcome.done() and not fresh:  # it came (or failed) since the status was read:
                continue  # read with the status now (no step of the thread may follow to wake a read)
            # a gap is read at once, unless the read just made stopped short of it (the stretch ended)
            read = (news.feed.gap() and not (fresh or read)) or await news.next(*_waiting(outcome))
    finally:
        news.close()
        if outcome is not None:
            outcome.cancel()


async def _stretch_for(gw: Gateway, ref: ResponseRef, news: StepNews, status: ConversationStatus,
                       fresh: bool) -> list[Message]:
    """`ref`'s stretch of the log, read; `news` told what the read reflects (a status read
    with it, `fresh`, is older than its log) and where it ended."""
    news.before_read()
    messages, history_length = await stretch_read(gw, ref)
    news.after_read(status.history_length if fresh else history_length)
    news.feed.read_to(ref.start + len(messages))
    return messages


def _waiting(outcome: asyncio.Future[bool] | None) -> tuple[asyncio.Future[bool], ...]:
    return () if outcome is None or outcome.done() else (outcome,)  # waited on until it is done


async def _outcome(gw: Gateway, ref: ResponseRef, status: ConversationStatus) -> bool:
    """Once the turn of `ref` has its reply or a question not pending in `status`: True;
    False at once when that way cannot tell."""
    try:
        await wait_outcome(gw.client, ref.thread, ref.turn, seen={q.question_id for q in status.pending})
    except OutcomeUnavailable:
        return False
    return True


async def ended(gw: Gateway, ref: ResponseRef) -> View:
    """The response once it has ended: its turn's outcome (its reply, or a question asked
    since) waited for with one call; at its reply, its log read (the reply and what it asks are
    known: no status read); read as it changes (`views`) when that way cannot tell or the
    outcome did not end it (a question this response does not stop at)."""
    # Any question pending is an outcome here: the one this response stops at (asked before or
    # after the request) is what it ends with; another one (a plain question) is read past.
    try:
        found = await wait_outcome(gw.client, ref.thread, ref.turn, seen=set())
    except OutcomeUnavailable:
        found = None
    if found is not None and found.reply is not None:
        return await replied(gw, ref, found.reply)
    if found is not None:
        view, _ = await read(gw, ref)
        if view.ended:
            return view
    async for view in views(gw, ref):
        if view.ended:
            return view
    raise AssertionError("unreachable")


async def replied(gw: Gateway, ref: ResponseRef, reply: TurnReply) -> View:
    """Response `ref` (one this gateway made or read) once its turn has `reply`: its stretch
    of the log read, no question waiting (its turn has ended)."""
    messages = await stretch(gw, ref)
    tools, breaks = await approval_tools(gw, ref.thread, agents_asking(messages))
    return view_of(ref, messages, reply, [], tools, breaks)


async def latest_of_thread(gw: Gateway, thread: str, page_size: int = 50) -> ResponseRef | None:
    """The thread's latest response (None before its first turn): from the message of its
    latest turn, read back from the end of its log a page at a time."""
    status = await gw.status(thread)
    if status.turns == 0:
        return None
    end = await gw.log_total(thread)
    while end > 0:
        start = max(0, end - page_size)
        page = await gw.page(thread, start, end - start)
        for offset in range(len(page.messages) - 1, -1, -1):
            if is_turn_start(page.messages[offset]):
                view, _, _ = await latest(gw, ResponseRef(thread, status.turns, start + offset, 0), True)
                return view.ref
        end = start
    return None
