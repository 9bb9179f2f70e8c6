"""The gateway's front door, as one ASGI middleware in front of the app: who may call
(bearer tokens, the hosts and origins of durable_teams/gateway/core/exposure.py), how much one
caller may hold at once, and how long a body may take to arrive.

Tokens come from configuration (durable_teams/gateway/core/scopes.py): operator tokens see and act
on every thread, scoped tokens only on the threads started with their scope. A gateway with no
tokens accepts every caller that reaches it (each one an operator), so `serve` refuses to start
without them unless bound to a loopback address. The inbox page itself carries no data and is
served to anyone: the calls it makes carry the token the person types into it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from durable_teams.gateway.core.exposure import PAGES, SECURITY_HEADERS, Exposure, is_loopback
from durable_teams.gateway.core.scopes import TOKENS_ENV, Token, as_tokens, operator_tokens

DEFAULT_MAX_BODY = 1_000_000

__all__ = ["DEFAULT_MAX_BODY", "TOKENS_ENV", "Guard", "Limits", "is_loopback", "tokens_from_env"]


def tokens_from_env(value: str | None = None) -> list[str]:
    """The operator tokens of `DURABLE_TEAMS_GATEWAY_TOKENS` (comma-separated)."""
    return [t.secret for t in operator_tokens(value)]


@dataclass(frozen=True)
class Limits:
    """What one caller (a token; without tokens, a client address) may hold at once."""

    max_body: int = DEFAULT_MAX_BODY
    """Largest request body, bytes (413 above)."""
    body_seconds: float = 10.0
    """Time for a request's whole body to arrive (408 after)."""
    max_requests: int = 64
    """Requests in progress per caller, streams included (429 above)."""
    max_followers: int = 16
    """Open streams per caller: `/events` followers, turn streams, streamed chat
    completions, MCP calls that wait for a team and A2A streams (429 above)."""


def is_stream(method: str, path: str) -> bool:
    return (method in ("GET", "HEAD") and path.endswith("/events")) or (method == "POST" and path.endswith("/turns"))


class Guard:
    """401 without a valid bearer token (when tokens are configured); 421/403/415 for what
    durable_teams/gateway/core/exposure.py refuses; 429 past a caller's `Limits`; 413 for a body
    over `max_body` bytes; 408 for a body that takes over `body_seconds` to arrive."""

    def __init__(self, app: ASGIApp, tokens: Sequence[str | Token], max_body: int = DEFAULT_MAX_BODY,
                 exposure: Exposure | None = None, limits: Limits | None = None) -> None:
        self.app, self.tokens = app, [(t.secret.encode(), t) for t in as_tokens(tokens)]
        self.exposure = exposure or Exposure.for_bind("127.0.0.1")
        self.limits = limits or Limits(max_body=max_body)
        self.requests: Counter[str] = Counter()
        self.streams: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        method, path = scope["method"], scope["path"]
        send = self._with_headers(send, headers, path)
        refused = self.exposure.refusal(method, path, headers)
        if refused is not None:
            return await error_response(send, *refused)
        if method == "OPTIONS":  # a CORS preflight: headers for listed origins only
            return await error_response(send, 204, "", "")
        token = self._token(headers)
        if self.tokens and path not in PAGES and token is None:
            return await error_response(send, 401, "missing or invalid bearer token", "authentication_error")
        caller = token.caller if token else _client(scope)
        stream = is_stream(method, path)
        if self.requests[caller] >= self.limits.max_requests or (
                stream and self.streams[caller] >= self.limits.max_followers):
            what = "open streams" if stream else "requests in progress"
            return await error_response(send, 429, f"too many {what} for this caller; try again later",
                                        "rate_limit_exceeded", retry_after=1)
        held = stream  # whether this request holds one of the caller's streams

        def open_stream() -> bool:
            """For a request that turns out to be a stream once its body is read (a streamed
            chat completion): hold one of the caller's streams until it ends, or False when
            the caller has all it may (the app answers 429 before anything goes in)."""
            nonlocal held
            if not held:
                if self.streams[caller] >= self.limits.max_followers:
                    return False
                held = True
                self.streams[caller] += 1
            return True

        state = scope.setdefault("state", {})
        state["caller"] = caller  # request.state.caller in the app
        state["scope"] = token.scope if token else None  # the threads it sees (None: all)
        state["open_stream"] = open_stream  # request.state.open_stream()
        self.requests[caller] += 1
        self.streams[caller] += stream
        try:
            await self._serve(scope, receive, send, headers)
        finally:
            self.requests[caller] -= 1
            self.streams[caller] -= held
            for counts in (self.requests, self.streams):
                if counts[caller] <= 0:
                    del counts[caller]

    async def _serve(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]) -> None:
        limit = self.limits.max_body
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return await error_response(send, 413, f"request body over {limit} bytes", "request_too_large")
        try:
            body = await asyncio.wait_for(_read_body(receive, limit), self.limits.body_seconds)
        except TimeoutError:
            return await error_response(send, 408, f"the request body did not arrive within "
                                        f"{self.limits.body_seconds:g} s", "request_timeout")
        if body is None:
            return await error_response(send, 413, f"request body over {limit} bytes", "request_too_large")
        replayed = False

        async def replay() -> Message:  # the body once, then the connection's own messages
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _token(self, headers: dict[bytes, bytes]) -> Token | None:
        """The caller's valid token, or None (every token compared: no early exit to time). A
        bearer token, or the `x-api-key` header LangGraph's clients send (LANGGRAPH_API_KEY)."""
        given = headers.get(b"authorization", b"")
        if given.lower().startswith(b"bearer "):
            presented = given[7:].strip()
        elif headers.get(b"x-api-key", b"").strip():
            presented = headers[b"x-api-key"].strip()
        else:
            return None
        found = None
        for secret, token in self.tokens:
            if hmac.compare_digest(presented, secret):
                found = token
        return found

    def _with_headers(self, send: Send, headers: dict[bytes, bytes], path: str) -> Send:
        """`send` adding the security headers, and CORS headers for a listed origin."""
        extra = SECURITY_HEADERS + self.exposure.cors_headers(headers)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)
        return sending


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"address:{client[0]}" if client else "address:?"


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


async def error_response(send: Send, status: int, message: str, kind: str,
                         retry_after: int | None = None) -> None:
    """An error body in OpenAI's shape, which OpenAI clients read and the native API shares
    (a 204 has no body)."""
    raw = b"" if status == 204 else json.dumps({"error": {"message": message, "type": kind}}).encode()
    headers: list[tuple[bytes, bytes]] = [(b"content-length", str(len(raw)).encode())]
    if raw:
        headers.append((b"content-type", b"application/json"))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def may_stream(request: Request) -> bool:
    """Whether the caller may hold one more stream (`--max-followers`): a streamed chat
    completion holds its connection and a live subscription as long as an `/events` follower,
    so it counts as one (durable_teams/gateway/core/auth.py holds it until the response ends)."""
    open_stream = getattr(request.state, "open_stream", None)
    return open_stream is None or bool(open_stream())
