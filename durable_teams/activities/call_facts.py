"""What a model backend learns about one call that its `ModelResponse` does not carry: the
provider, the server, the response's id and model. Tracing (durable_teams/tracing/interceptors.py) opens a
collection around each `call_model` and puts these on the call's span and metrics; without
one, noting is a no-op. Kept out of `ModelResponse` so no history grows for it."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_FACTS: ContextVar[dict[str, Any] | None] = ContextVar("durable_teams_call_facts", default=None)


@contextmanager
def collecting() -> Iterator[dict[str, Any]]:
    """A fresh dict that `note` fills during the block (tasks the block starts share it)."""
    facts: dict[str, Any] = {}
    token = _FACTS.set(facts)
    try:
        yield facts
    finally:
        _FACTS.reset(token)


def note(**facts: Any) -> None:
    """Record OpenTelemetry attributes of the current call (`None` values are skipped);
    dotted names are passed as `note(**{"server.address": ...})`."""
    collected = _FACTS.get()
    if collected is not None:
        collected.update({k: v for k, v in facts.items() if v is not None and v != ""})


def server_facts(base_url: str) -> dict[str, Any]:
    """`server.address` and `server.port` of an endpoint's base URL (the port a scheme implies
    when the URL names none)."""
    parts = urllib.parse.urlsplit(base_url)
    try:
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a port that is not a number: leave it out
        port = None
    return {"server.address": parts.hostname, "server.port": port}


def note_response(data: dict[str, Any]) -> None:
    """The response's id and model, from a decoded Chat Completion."""
    response_id, model = data.get("id"), data.get("model")
    note(**{"gen_ai.response.id": response_id if isinstance(response_id, str) else None,
            "gen_ai.response.model": model if isinstance(model, str) else None})
