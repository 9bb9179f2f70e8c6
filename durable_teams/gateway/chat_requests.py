"""What a chat request says beyond its messages (its end user, its token limit, whether it is
a retry, whose chat it is, its Idempotency-Key) and the exchange it gets: its input accepted by
a thread and what waits for the outcome. Shared by the chat path
(durable_teams/gateway/openai_compat.py, chat_resent.py) and the Responses API."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_teams.gateway import requests as checks
from durable_teams.gateway.chat_history import FieldError
from durable_teams.gateway.chat_marks import mark_line, mark_of
from durable_teams.gateway.keyed import caller_key
from durable_teams.gateway.scopes import scope_of
from durable_teams.gateway.threads import Gateway, Outcome
from durable_teams.live.hub import Delta


def end_user(body: dict[str, Any]) -> str | None:
    """OpenAI's `user`, or its newer `safety_identifier` (checked by `check_fields`): None when
    absent, empty or blank, which all mean the same (no end user named), for the thread's memo
    and its chat key alike. Both sent: both, as one id."""
    ids = [value for field in ("user", "safety_identifier")
           if isinstance(value := body.get(field), str) and value.strip()]
    if len(ids) == 2:
        return json.dumps(ids)
    return ids[0] if ids else None


def check_end_user(body: dict[str, Any]) -> None:
    """`user` and `safety_identifier`, when sent: strings of at most `MAX_ID_CHARS` characters
    (the end user a new thread speaks for, docs/architecture.md, "Tenants and users")."""
    for field in ("user", "safety_identifier"):
        user = body.get(field)
        if user is not None and (not isinstance(user, str) or len(user) > checks.MAX_ID_CHARS):
            raise FieldError(f"'{field}' must be a string of at most {checks.MAX_ID_CHARS} characters", field)
        if isinstance(user, str):
            checks.encodable(user, field)


MATCH_ATTEMPTS = 3
"""Threads a history-resending request tries when other requests keep getting in first."""
RETRY_COUNT = "x-stainless-retry-count"
"""The header the openai SDKs (Python, JS) send: how many times the request was retried."""


@dataclass
class Exchange:
    """A request's input accepted by `thread`: what waits for its outcome and, when streaming,
    the live deltas subscribed to before the input went in (its first deltas are not missed)."""

    thread: str
    outcome: Callable[[], Awaitable[Outcome]]
    subscription: AbstractAsyncContextManager[asyncio.Queue[Delta]] | None = None
    deltas: asyncio.Queue[Delta] | None = None
    mark: str = ""
    """What the answer ends with: the thread's mark, for a history that does not carry it yet
    (durable_teams/gateway/chat_marks.py)."""


async def exchange_on(gw: Gateway, thread: str, stream: bool,
                      begin: Callable[[], Awaitable[Callable[[], Awaitable[Outcome]]]],
                      mark: str = "") -> Exchange:
    if not stream:
        return Exchange(thread, await begin(), mark=mark)
    outcome, subscription, deltas = await gw.subscribed(thread, begin)
    return Exchange(thread, outcome, subscription, deltas, mark)


def says_retry(request: Request) -> bool:
    """Whether the request says it is one sent again: an `Idempotency-Key`, or the openai
    SDKs' retry count above 0."""
    count = request.headers.get(RETRY_COUNT, "").strip()
    return bool(request.headers.get("idempotency-key")) or (count.isdigit() and int(count) > 0)


def input_id(*parts: str) -> str:
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return f"named-{digest[:32]}"


def caller_scope(request: Request) -> str:
    """Whose chat families a caller's requests continue: its scope's (any token of a scoped
    name), else its token's (a digest of it); "" on a gateway without tokens."""
    tenant = scope_of(request)
    if tenant is not None:
        return f"scope:{tenant}"
    caller = getattr(request.state, "caller", "")
    return caller if caller.startswith("token:") else ""


def may_stream(request: Request) -> bool:
    """Whether the caller may hold one more stream (`--max-followers`): a streamed chat
    completion holds its connection and a live subscription as long as an `/events` follower,
    so it counts as one (durable_teams/gateway/auth.py holds it until the response ends)."""
    open_stream = getattr(request.state, "open_stream", None)
    return open_stream is None or bool(open_stream())


def max_tokens(body: dict[str, Any]) -> int | None:
    """`max_completion_tokens` (or the older `max_tokens`): a positive integer, or None."""
    found: list[int] = []
    for name in ("max_completion_tokens", "max_tokens"):  # both checked: neither hides the other
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1_000_000:
            raise FieldError(f"'{name}' must be an integer from 1 to 1000000", name)
        found.append(value)
    return found[0] if found else None


def keyed_of(request: Request) -> str | None:
    """The request's Idempotency-Key as its caller's own (checked), or None."""
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    return caller_key(request, key) if key else None


async def taken_soon(gw: Gateway, thread: str, input_id: str) -> int | None:
    """`taken`, waiting up to `busy_seconds` for the request that started `thread` a moment ago
    to send its input (never sent twice at once: the second would answer the first's question)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gw.busy_seconds
    while True:
        number = await taken(gw, thread, input_id)
        if number is not None or loop.time() >= deadline:
            return number
        await asyncio.sleep(gw.poll_seconds)  # the workflow's state, polled as `_outcome` does


async def taken(gw: Gateway, thread: str, input_id: str) -> int | None:
    """The turn `thread` took the input `input_id` in (or answered with it), None when it did
    not (or there is no such thread)."""
    try:
        return await gw.turn_of(thread, input_id)
    except (RPCError, WorkflowQueryFailedError):
        return None


def mark_for(gw: Gateway, thread: str, carried: str | None) -> str:
    """The mark line an answer on `thread` ends with: none when the history carries it already
    (or marks are off)."""
    return mark_line(thread) if gw.chat_marks and carried != mark_of(thread) else ""
