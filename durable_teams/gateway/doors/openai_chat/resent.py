"""The chat path for a client that resends its history and names no thread: the thread it
continues (durable_teams/gateway/core/resent_threads.py), a fork when an earlier message was edited
(edits.py), or a new one; an Idempotency-Key's record kept by Temporal (core/idempotency.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from starlette.requests import Request
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.checkpoints import CheckpointError
from durable_teams.client.refusals import ConversationEnded, TurnConflict
from durable_teams.gateway.core import resent_history as chats
from durable_teams.gateway.core import resent_threads as chat_threads
from durable_teams.gateway.core.end_users import end_user
from durable_teams.gateway.core.idempotency import claim_record, recorded, taken, taken_soon
from durable_teams.gateway.core.outcomes import Outcome
from durable_teams.gateway.core.resent_threads import MATCH_ATTEMPTS, says_retry
from durable_teams.gateway.core.scopes import caller_scope, scope_of
from durable_teams.gateway.core.thread_marks import latest_mark, unmarked
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.openai_chat import edits as chat_edits
from durable_teams.gateway.doors.openai_chat.fields import (
    Exchange,
    exchange_on,
    keyed_of,
    mark_for,
    max_tokens,
)

log = logging.getLogger("durable_teams.gateway")

Begin = Callable[[], Awaitable[Callable[[], Awaitable[Outcome]]]]
"""What sends a request's input into its thread, and gives what waits for its outcome."""
Claim = Callable[[str], Awaitable[None]]
"""A keyed request's key recorded as this request's, just before its input goes into a thread."""
OnThread = Callable[[str, Begin], Awaitable[Exchange]]
"""The exchange on a thread, its input sent by a `Begin`."""


async def chat_thread(gw: Gateway, team: str, history: chats.ChatHistory, body: dict[str, Any],
                      request: Request) -> Exchange:
    """The exchange on the thread a history-resending client continues
    (durable_teams/gateway/core/resent_threads.py), or on a new one that opens with the earlier
    messages, closed when its chat goes quiet. When another request with the same history got
    in first (two chats that said the same words, sent at once), or the thread ended since it
    was found, the next thread that fits, or a new one.

    A retry stays a retry: an `Idempotency-Key` stands for this request alone, kept in Temporal
    (durable_teams/gateway/core/idempotency.py, `claim_record`: other content is a 409, the same content however
    late gets the first outcome), and a new thread opened for a keyed request or a marked
    history has an id derived from it, so the same request sent again finds that thread."""
    stream, tenant = bool(body.get("stream")), scope_of(request)
    await gw.require_worker()  # before a thread starts: a chat never waits on no one (503)
    history = chats.without_asked_again(history)  # an unclear answer: the thread never took it
    key = chats.chat_key(caller_scope(request), team, history, end_user(body), tenant)
    keys = chats.request_keys(key, history)
    retry = says_retry(request)
    carried = latest_mark(history.earlier)
    keyed = keyed_of(request)
    on = partial(_on_thread, gw, stream, carried)
    if keyed is not None:
        first = await recorded(gw.client, "chat", keyed, keys.this)
        if first is not None:  # this very request, sent again
            retry = True
            number = await taken(gw, first.thread, keys.this)
            if number is not None:  # however late: the first outcome, nothing sent
                return await on(first.thread, partial(gw.begin_exchange, first.thread, history.text, keys.this,
                                                      max_tokens(body), again=True, turn=number))
    claim = partial(_claim, gw, keyed, keys.this)
    for _ in range(MATCH_ATTEMPTS):
        match = await chat_threads.find_thread(gw, key, history, retry=retry, keys=keys,
                                        wait_seconds=gw.chat_lookup_seconds)
        if match is None:
            break
        try:
            if not match.again:
                await claim(match.thread)
            return await on(match.thread, partial(gw.begin_exchange, match.thread, history.text, keys.this,
                                                  max_tokens(body), seen=match.status, again=match.again))
        except (TurnConflict, ConversationEnded):  # taken by another request, or ended since
            continue
    forked = await _on_edit(gw, key, history, keys, max_tokens(body), claim, on)
    if forked is not None:
        return forked
    seed = f"{keyed or ''}\0{carried or ''}\0{keys.this}" if keyed or carried else None
    return await _on_new_thread(gw, team, history, body, key, keys, seed, tenant, claim, on)


async def _on_edit(gw: Gateway, key: chats.ChatKey, history: chats.ChatHistory, keys: chats.RequestKeys,
                   tokens: int | None, claim: Claim, on: OnThread) -> Exchange | None:
    """An earlier message edited: the exchange on its thread forked there (edits.py); None when
    none was, or its turn cannot be forked (a new thread, as before)."""
    edit = await chat_edits.edited_turn(gw, key, history)
    if edit is None:
        return None
    fork_id = chat_edits.fork_id(key, history, edit, keys)
    try:
        await claim(fork_id)
        return await on(fork_id, partial(chat_edits.begin_fork, gw, key, history, edit, keys, tokens))
    except CheckpointError as err:  # a turn that cannot be forked: a new thread, as before
        log.info("chat edit of %s not forked (%s); a new thread opens", edit.thread, err)
    return None


async def _on_new_thread(gw: Gateway, team: str, history: chats.ChatHistory, body: dict[str, Any],
                         key: chats.ChatKey, keys: chats.RequestKeys, seed: str | None, tenant: str | None,
                         claim: Claim, on: OnThread) -> Exchange:
    """The exchange on a new thread that opens with the earlier messages (its id derived from
    `seed`, so the same request sent again finds it); one this very request started before (sent
    again, or its twin at once) is taken, or a new one opens when that one is over."""
    thread = chats.new_thread_id(key, history, seed)
    await claim(thread)
    try:
        await gw.start_thread(team, thread, user=end_user(body), history=unmarked(history.earlier),
                              scope=tenant, idle_close_seconds=gw.chat_idle_seconds)
    except WorkflowAlreadyStartedError:  # by this very request: sent again, or its twin at once
        number = await taken_soon(gw, thread, keys.this)  # the twin sends it right after the start
        if number is not None:
            return await on(thread, partial(gw.begin_exchange, thread, history.text, keys.this,
                                            max_tokens(body), again=True, turn=number))
        try:
            await gw.running(thread, team, tenant)  # its twin started it, and sends the same input
        except ConversationEnded:  # that thread is over (closed when its chat went quiet): a new one
            thread = await gw.start_thread(team, chats.new_thread_id(key, history), user=end_user(body),
                                           history=unmarked(history.earlier), scope=tenant,
                                           idle_close_seconds=gw.chat_idle_seconds)
    return await on(thread, partial(gw.begin_exchange, thread, history.text, keys.this, max_tokens(body)))


async def _on_thread(gw: Gateway, stream: bool, carried: str | None, thread: str,
                     begin: Begin) -> Exchange:
    return await exchange_on(gw, thread, stream, begin, mark_for(gw, thread, carried))


async def _claim(gw: Gateway, keyed: str | None, request: str, thread: str) -> None:
    """Just before a keyed request's input goes into `thread`: the key recorded as this
    request's (`KeyReused`, 409, when another request under it came first)."""
    if keyed is not None:
        await claim_record(gw.client, gw.task_queue, "chat", keyed, request, thread)
