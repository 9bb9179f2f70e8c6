"""Which thread a chat request continues when it names none (no `X-Thread-Id`).

A request is matched to a thread by what it resends (durable_teams/gateway/core/resent_history.py),
with nothing kept in the gateway (several gateways agree):

- The thread's first answer carries its mark (durable_teams/gateway/core/thread_marks.py), which the
  resent history carries back: a marked history continues that thread or none, so identical
  conversations of one caller stay apart.
- A thread continues only if its latest input was this chat's previous request
  (`request_keys`) and, without a mark, its latest answer (its reply, or the question it waits
  on) is the request's last assistant message. Without a mark (a client that strips it), only
  the one thread of the family that fits: several that fit said the same words, and the
  request opens a new thread rather than guess.
- The same request sent again (its own input id is the thread's latest) is the same input.
- No thread fits (a conversation pasted into a new chat, a thread that has ended, an earlier
  message edited, a history cut short): a new thread opens with the earlier messages as its
  history (marks left out), so the team sees the conversation so far.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from starlette.requests import Request
from temporalio.client import (
    WorkflowExecution,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.service import RPCError

from durable_teams.client.refusals import Patience
from durable_teams.gateway.core.resent_history import (
    KEY_PREFIX,
    ChatHistory,
    ChatKey,
    RequestKeys,
    continues,
    family,
    request_keys,
)
from durable_teams.gateway.core.scopes import sees
from durable_teams.gateway.core.thread_marks import latest_mark
from durable_teams.gateway.core.threads import Gateway
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message
from durable_teams.workflows.turn_states import question_text

log = logging.getLogger("durable_teams.gateway")
T = TypeVar("T")

CANDIDATES = 20
"""Running threads with the same first message checked at most (the newest first)."""


@dataclass(frozen=True)
class Match:
    """A running thread a request continues, as it stood when checked (`again`: it already
    took this request)."""

    thread: str
    status: ConversationStatus
    again: bool = False


async def find_thread(gw: Gateway, key: ChatKey, history: ChatHistory, *, retry: bool = False,
                      keys: RequestKeys | None = None, wait_seconds: float = 1.0) -> Match | None:
    """The running thread this history continues, or None.

    A history that carries a thread mark (durable_teams/gateway/core/thread_marks.py) continues that
    thread of its family or none: never another chat's thread with the same words. One without
    a mark (a client that strips it, a thread of an earlier release) continues the one thread
    of its family that fits; when several fit (identical conversations), none: a new thread
    with the history is safe, a guess is not. A first message continues none, unless the
    request says it is a retry (`retry`): then the one thread that took it, if only one did.
    Waits up to `wait_seconds` for the visibility store to list a thread started moments ago
    (it lags the start a little)."""
    said = next((m for m in reversed(history.earlier) if m.role == "assistant"), None)
    follows = said if said is not None and history.earlier[-1] is said else None
    keys = keys or request_keys(key, history)
    prefix = family(key, history.first_user_text)
    mark = latest_mark(history.earlier)
    if mark is not None:
        found = await _fits(gw, prefix + mark, key, follows, keys, history.user_messages)
        return found or await _took(gw, prefix + mark, key, keys)
    if follows is None and not retry:
        return None  # no answer of ours to continue from
    if '"' in prefix or "\\" in prefix:
        return None  # a team name no query can quote (team names are identifiers)
    query = f'WorkflowId STARTS_WITH "{prefix}" AND ExecutionStatus = "Running"'
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        try:
            listed = await _patiently(gw, prefix, lambda: _listed(gw, query))
        except RPCError as err:  # a visibility store without prefix search: every chat starts anew
            log.warning("cannot look up chat threads (%s): each such request opens a new thread "
                        "with the history it sends", err.message)
            return None
        fits = [match for wf in listed
                if (match := await _fits(gw, wf.id, key, follows, keys, history.user_messages)) is not None]
        if len(fits) == 1:
            return fits[0]
        if fits:  # identical conversations: which one is this? Not a guess
            log.info("%d chat threads fit an unmarked request equally; it opens a new thread", len(fits))
            return None
        if listed or loop.time() >= deadline:
            return None
        await asyncio.sleep(0.2)


async def _took(gw: Gateway, thread: str, key: ChatKey, keys: RequestKeys) -> Match | None:
    """The chat's marked thread, when it took this very request already, however long ago (a
    late retry: its first outcome, nothing sent). Only for a marked thread: identical chats of
    one caller send identical requests, and only the mark tells whose thread took it."""
    try:
        if key.tenant is not None and not sees(key.tenant, await _patiently(gw, thread, lambda: gw.memo(thread))):
            return None
        if await _patiently(gw, thread, lambda: gw.turn_of(thread, keys.this)) is None:
            return None
        return Match(thread, await _patiently(gw, thread, lambda: gw.status(thread)), again=True)
    except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError):
        return None


async def _fits(gw: Gateway, thread: str, key: ChatKey, said: Message | None, keys: RequestKeys,
                user_messages: int) -> Match | None:
    try:
        if key.tenant is not None and not sees(key.tenant, await _patiently(gw, thread, lambda: gw.memo(thread))):
            return None  # not the caller's (its id is in the caller's family: never so, unless forged)
        status = await _patiently(gw, thread, lambda: gw.status(thread))
    except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError):
        return None  # no such thread, ended since it was listed, or not answering: not this conversation
    if status.closed:
        return None
    if status.last_input_id == keys.this:
        return Match(thread, status, again=True)
    if said is None:
        return None
    latest = status.last_input_id
    if latest is not None and latest.startswith(KEY_PREFIX):
        if latest != keys.previous:
            return None  # it took other messages than this chat's last request
    elif status.turns >= user_messages:
        return None  # a thread of an earlier release: judged by its answer and turn count
    if status.pending:
        head = question_text(status.pending[0])
    elif status.last_reply is not None:
        head = status.last_reply.text
    else:
        return None
    return Match(thread, status) if continues(said.content or "", head) else None


async def _patiently(gw: Gateway, thread: str, read: Callable[[], Awaitable[T]]) -> T:
    """`read()`, made again while the server is only busy or briefly away (a query timed out
    under load, say) until the gateway's `busy_seconds` run out (`ConversationBusy`, 429: the
    request was not sent). Such an error is never an answer: taken for "not this thread", it
    had a late retry open a new thread and run its request a second time."""
    return await Patience(thread, gw.busy_seconds).retry(read)


async def _listed(gw: Gateway, query: str) -> list[WorkflowExecution]:
    return [wf async for wf in gw.client.list_workflows(query, limit=CANDIDATES)]


MATCH_ATTEMPTS = 3
"""Threads a history-resending request tries when other requests keep getting in first."""


RETRY_COUNT = "x-stainless-retry-count"
"""The header the openai SDKs (Python, JS) send: how many times the request was retried."""


def says_retry(request: Request) -> bool:
    """Whether the request says it is one sent again: an `Idempotency-Key`, or the openai
    SDKs' retry count above 0."""
    count = request.headers.get(RETRY_COUNT, "").strip()
    return bool(request.headers.get("idempotency-key")) or (count.isdigit() and int(count) > 0)
