"""Bearer tokens and request size limits, as one ASGI middleware in front of the app.

Tokens come from configuration (`DURABLE_TEAMS_GATEWAY_TOKENS`, comma-separated). A gateway
with no tokens accepts everyone, so `serve` refuses to start without them unless bound to a
loopback address. The inbox page itself carries no data and is served to anyone: the calls it
makes carry the token the person types into it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKENS_ENV = "DURABLE_TEAMS_GATEWAY_TOKENS"
OPEN_PATHS = {"/", "/inbox", "/healthz"}
DEFAULT_MAX_BODY = 1_000_000


def tokens_from_env(value: str | None = None) -> list[str]:
    raw = os.environ.get(TOKENS_ENV, "") if value is None else value
    return [t.strip() for t in raw.split(",") if t.strip()]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """401 without a valid bearer token (when tokens are configured); 413 for a body larger
    than `max_body` bytes, by its Content-Length or, when chunked,
    once that many bytes have come."""

    def __init__(self, app: ASGIApp, tokens: list[str], max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app, self.tokens, self.max_body = app, [t.encode() for t in tokens], max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        if self.tokens and scope["path"] not in OPEN_PATHS and not self._authorized(headers):
            return await _error(send, 401, "missing or invalid bearer token", "authentication_error")
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _error(send, 413, f"request body over {self.max_body} bytes", "request_too_large")
        body = await _read_body(receive, self.max_body)
        if body is None:
            return await _error(send, 413, f"request body over {self.max_body} bytes", "request_too_large")
        replayed = False

        async def replay() -> Message:  # the body once, then the connection's own messages
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        given = headers.get(b"authorization", b"")
        if not given.lower().startswith(b"bearer "):
            return False
        token = given[7:].strip()
        return any(hmac.compare_digest(token, t) for t in self.tokens)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once it passes `limit` bytes (a chunked body has no
    Content-Length to check first). Bodies are small JSON, so reading them first costs little."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if size > limit:
            return None
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _error(send: Send, status: int, message: str, kind: str) -> None:
    """An error body in OpenAI's shape, which OpenAI clients read and the native API shares."""
    body: dict[str, Any] = {"error": {"message": message, "type": kind}}
    raw = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})
