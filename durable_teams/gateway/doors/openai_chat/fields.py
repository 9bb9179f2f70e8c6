"""What a chat request says beyond its messages (its end user, its token limit, its
Idempotency-Key, the mark its answer ends with) and the exchange it gets: its input accepted by
a thread and what waits for the outcome (door.py, resent.py). Whether it is a retry and whose
chat it is: durable_teams/gateway/core/resent_threads.py and core/scopes.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.idempotency import caller_key
from durable_teams.gateway.core.outcomes import Outcome
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.thread_marks import mark_line, mark_of
from durable_teams.gateway.core.threads import Gateway
from durable_teams.live.hub import Delta


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
    (durable_teams/gateway/core/thread_marks.py)."""


async def exchange_on(gw: Gateway, thread: str, stream: bool,
                      begin: Callable[[], Awaitable[Callable[[], Awaitable[Outcome]]]],
                      mark: str = "") -> Exchange:
    if not stream:
        return Exchange(thread, await begin(), mark=mark)
    outcome, subscription, deltas = await gw.subscribed(thread, begin)
    return Exchange(thread, outcome, subscription, deltas, mark)


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


def mark_for(gw: Gateway, thread: str, carried: str | None) -> str:
    """The mark line an answer on `thread` ends with: none when the history carries it already
    (or marks are off)."""
    return mark_line(thread) if gw.chat_marks and carried != mark_of(thread) else ""
