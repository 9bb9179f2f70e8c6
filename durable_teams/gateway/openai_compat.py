"""`POST /v1/chat/completions` in OpenAI's format, so any OpenAI client or chat UI can talk
to a durable team. `model` names the team; the `X-Thread-Id` header, else the `user` field,
names the thread (a new one when absent; its id returns in the `X-Thread-Id` header). Only the
last user message is sent: the thread remembers the rest. A question the team asks comes back
as the assistant's message, and the next request's last user message answers it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.client import ConversationEnded
from durable_teams.gateway.sse import sse_frame, sse_response
from durable_teams.gateway.threads import Gateway, TeamMismatch


def last_user_text(messages: Any) -> str:
    if not isinstance(messages, list):
        raise HTTPException(400, "'messages' must be a list")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts: keep the text ones
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content
    raise HTTPException(400, "no user message with text in 'messages'")


async def chat_completions(request: Request) -> Response:
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HTTPException(400, "the body is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        raise HTTPException(400, "'model' (the team's name) is required")
    team: str = body["model"]
    text = last_user_text(body.get("messages"))
    gw: Gateway = request.app.state.gateway
    thread = request.headers.get("x-thread-id") or body.get("user") or None
    if not isinstance(thread, str | None):
        raise HTTPException(400, "'user' must be a string")
    try:
        exists = thread is not None and await gw.running(thread, team)
    except TeamMismatch as mismatch:
        raise HTTPException(400, str(mismatch)) from None
    if thread is None or not exists:
        thread = await gw.start_thread(team, thread)
    headers = {"X-Thread-Id": thread}
    if body.get("stream"):
        return sse_response(_stream(gw, thread, team, text), headers)
    kind, answer = await gw.converse(thread, text)
    return JSONResponse(completion(team, answer, kind), headers=headers)


def completion(team: str, text: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": team, "system_fingerprint": kind,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


async def _stream(gw: Gateway, thread: str, team: str, text: str) -> AsyncIterator[str]:
    """OpenAI's chunk stream. The reply arrives whole (no token streaming yet), so it is one
    content chunk between the role chunk and the finishing chunk."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": team}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse_frame(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    yield chunk({"role": "assistant", "content": ""})
    try:
        _, answer = await gw.converse(thread, text)
    except ConversationEnded as ended:  # the status is sent already: OpenAI's in-stream error
        yield sse_frame(None, {"error": {"message": str(ended), "type": "conversation_ended"}})
        return
    yield chunk({"content": answer})
    yield chunk({}, "stop")
    yield sse_frame(None, "[DONE]")
