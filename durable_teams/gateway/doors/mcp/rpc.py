"""In front of the MCP SDK's HTTP endpoint: GET and DELETE get 405 (the endpoint is stateless:
no stream of the server's own to hold open, no session to end), but for the session of a
client that declared elicitation (`McpHttp`); a POST body that is not one JSON-RPC message gets
the protocol's error object (400), never a silent 202 or a validator's traceback text; a call
that may wait for a team (`tools/call`, `tasks/result`) holds one of the caller's streams
(`--max-followers`, durable_teams/gateway/core/auth.py), so it is refused with 429 past them."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_ID_CHARS = 200
MAX_ID = 2**53 - 1
"""The largest id every JSON client reads exactly."""
WAITING_METHODS = frozenset({"tools/call", "tasks/result"})


class Refusal(Exception):
    """A message refused before the SDK sees it: its JSON-RPC error and the id to answer with."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


def good_id(value: Any) -> bool:
    if isinstance(value, str):
        return 0 < len(value) <= MAX_ID_CHARS and value.isprintable()
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_ID <= value <= MAX_ID


def checked(body: bytes) -> dict[str, Any]:
    """The one JSON-RPC message a POST carries, or `Refusal` saying what is wrong with it."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        raise Refusal(types.PARSE_ERROR, "Parse error: the body is not JSON") from None
    if isinstance(message, list):
        raise Refusal(types.INVALID_REQUEST, "Invalid Request: batches are not supported; send one message a request")
    if not isinstance(message, dict):
        raise Refusal(types.INVALID_REQUEST, "Invalid Request: a JSON-RPC message is an object")
    request_id = message.get("id")
    answer_id = request_id if good_id(request_id) else None
    if message.get("jsonrpc") != "2.0":
        raise Refusal(types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', answer_id)
    if "id" in message and not good_id(request_id):
        raise Refusal(types.INVALID_REQUEST, f"Invalid Request: an id is a string of 1 to {MAX_ID_CHARS} "
                      f"characters or an integer within +-{MAX_ID}")
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method or len(method) > 200:
            raise Refusal(types.INVALID_REQUEST, 'Invalid Request: "method" must be a method name', answer_id)
        if "params" in message and not isinstance(message["params"], dict):
            raise Refusal(types.INVALID_PARAMS, 'Invalid params: "params" must be an object', answer_id)
    elif "id" not in message or not ("result" in message or "error" in message):
        raise Refusal(types.INVALID_REQUEST, 'Invalid Request: no "method"', answer_id)
    return message


class McpHttp:
    """The MCP endpoint behind the envelope check and the streams count: stateless (`app`), but
    for a client that declares elicitation in its `initialize` (an earlier revision's), whose
    session `sessions` keeps (in this process: after a restart the client initializes again)."""

    def __init__(self, app: ASGIApp, sessions: ASGIApp | None = None) -> None:
        self.app, self.sessions = app, sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        in_session = self.sessions is not None and any(k == b"mcp-session-id" for k, _ in scope["headers"])
        if scope["method"] != "POST":  # stateless: no stream to open (GET), no session to end
            return await (self.sessions(scope, receive, send) if self.sessions is not None and in_session
                          else method_not_allowed(send))
        body = await read_body(receive)
        try:
            message = checked(body)
        except Refusal as refused:
            return await rpc_error(send, 400, refused.code, refused.message, refused.request_id)
        app = self.sessions if self.sessions is not None and (in_session or elicits(message)) else self.app
        if message.get("method") in WAITING_METHODS and "id" in message:
            open_stream = scope.get("state", {}).get("open_stream")
            if open_stream is not None and not open_stream():
                return await rpc_error(send, 429, types.INTERNAL_ERROR, "too many open streams for this caller "
                                       "(calls waiting for a team); try again later", message["id"], retry_after=1)
        sent = False

        async def replay() -> Message:  # the body once, then the connection's own messages
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)


def elicits(message: dict[str, Any]) -> bool:
    """An `initialize` whose client declares elicitation (it may be asked during a call)."""
    params = message.get("params")
    capabilities = params.get("capabilities") if message.get("method") == "initialize" and isinstance(
        params, dict) else None
    return isinstance(capabilities, dict) and capabilities.get("elicitation") is not None


async def read_body(receive: Receive) -> bytes:
    """The whole body (the gateway's guard has bounded it already)."""
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def method_not_allowed(send: Send) -> None:
    raw = json.dumps({"error": {"message": "this MCP endpoint is stateless: POST one JSON-RPC message",
                                "type": "method_not_allowed"}}).encode()
    await send({"type": "http.response.start", "status": 405, "headers": [
        (b"allow", b"POST"), (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})


async def rpc_error(send: Send, status: int, code: int, message: str, request_id: Any,
                    retry_after: int | None = None) -> None:
    raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})
