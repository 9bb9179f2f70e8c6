"""Cached tool results (`@tool(idempotent=True, cache_seconds=...)`): a result is kept in the
worker's memory store under the tool's name and a digest of what ran (`CallIdentity`: the team,
the function's qualified name, the tenant, the validated arguments), and reused by any
conversation of that team and tenant that makes the same call within the time given: two
teams' tools of one name, or one team's under two tenants, never share a result. The lookup
runs in the tool activity (the workflow never reads a clock or a store).

Only a plain successful result is kept (no error, no context update, no handoff). A store that
fails never fails the tool: the tool runs as if nothing were cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .store import Store, StoreError

log = logging.getLogger(__name__)

NAMESPACE = ("durable-teams", "tool-cache")
"""Cached results live under this prefix, then the tool's name."""


@dataclass(frozen=True)
class Cached:
    content: str
    age_seconds: float


@dataclass(frozen=True)
class CallIdentity:
    """What a cached result stands for: `function` is the tool's qualified name
    (`module.qualname`, `function_identity`), not only its tool name; `tenant` None for a
    conversation of no tenant (workflows/tenancy.py); `arguments` canonical
    (tool_schema.canonical_arguments)."""

    team: str | None
    function: str
    tenant: str | None
    arguments: str


def function_identity(fn: Any) -> str:
    """`module.qualname` of a tool's function (of a partial's function, or of a callable
    object's class)."""
    inner = getattr(fn, "func", fn)  # functools.partial
    named = inner if hasattr(inner, "__qualname__") else type(inner)
    return f"{getattr(named, '__module__', '?')}.{named.__qualname__}"


def cache_key(call: CallIdentity) -> str:
    """The digest of what a call ran (every part of `call`, unambiguously joined)."""
    parts = [call.team, call.function, call.tenant, call.arguments]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def marked(cached: Cached) -> str:
    """The tool message of a reused result: the result, then a line saying it is cached."""
    note = f"[cached result from {cached.age_seconds:.0f}s ago, reused for the same arguments]"
    return f"{cached.content}\n\n{note}" if cached.content else note


async def lookup(store: Store, tool: str, call: CallIdentity, seconds: float) -> Cached | None:
    """The result kept for this call, if it is younger than `seconds`."""
    try:
        item = await store.get((*NAMESPACE, tool), cache_key(call))
    except Exception as err:  # noqa: BLE001 - the cache is an optimisation; the tool still runs
        log.warning("tool %s: the result cache could not be read (%s: %s)", tool, type(err).__name__, err)
        return None
    if item is None or not isinstance(item.value.get("content"), str):
        return None
    age = (datetime.now(UTC) - item.updated_at).total_seconds()
    return Cached(item.value["content"], max(age, 0.0)) if age < seconds else None


async def keep(store: Store, tool: str, call: CallIdentity, content: str) -> None:
    """Keep a result for later calls (an upsert: a retried call replaces it)."""
    try:
        await store.put((*NAMESPACE, tool), cache_key(call), {"content": content})
    except StoreError as err:  # too large, say: not kept
        log.info("tool %s: result not cached (%s)", tool, err)
    except Exception as err:  # noqa: BLE001
        log.warning("tool %s: the result could not be cached (%s: %s)", tool, type(err).__name__, err)
