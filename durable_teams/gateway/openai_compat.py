"""`POST /v1/chat/completions` in OpenAI's format, so any OpenAI client or chat UI can talk
to a durable team. `model` names the team; the `X-Thread-Id` header, else the `user` field,
names the thread (a new one when absent; its id returns in the `X-Thread-Id` header). Only the
last user message is sent: the thread remembers the rest. A question the team asks comes back
as the assistant's message, and the next request's last user message answers it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.client import ConversationEnded
from durable_teams.gateway.sse import sse_frame, sse_response
from durable_teams.gateway.threads import Gateway, TeamMismatch
from durable_teams.live import Delta


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
    gw.check_team(team)
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
    """OpenAI's chunk stream: the team's text as its model calls write it (live deltas,
    durable_teams/live.py), then what is left of the reply (all of it without live deltas)."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": team}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse_frame(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    yield chunk({"role": "assistant", "content": ""})
    content = ContentStream()
    async with gw.hub.subscribe(thread) as deltas:
        exchange = asyncio.ensure_future(gw.converse(thread, text))
        try:
            async for delta in until_done(exchange, deltas):
                piece = content.take(delta)
                if piece:
                    yield chunk(piece)
            _, answer = exchange.result()
        except ConversationEnded as ended:  # the status is sent already: OpenAI's in-stream error
            yield sse_frame(None, {"error": {"message": str(ended), "type": "conversation_ended"}})
            return
        finally:
            exchange.cancel()  # the client left: stop waiting (the turn goes on in the workflow)
    rest = content.finish(answer)
    if rest:
        yield chunk({"content": rest})
    yield chunk({}, "stop")
    yield sse_frame(None, "[DONE]")


async def until_done(exchange: asyncio.Future[Any], deltas: asyncio.Queue[Delta]) -> AsyncIterator[Delta]:
    """The deltas that arrive until `exchange` is done."""
    while not exchange.done():
        getting = asyncio.ensure_future(deltas.get())
        await asyncio.wait([exchange, getting], return_when=asyncio.FIRST_COMPLETED)
        if getting.done():
            yield getting.result()
        else:
            getting.cancel()
    while not deltas.empty():
        yield deltas.get_nowait()


@dataclass
class ContentStream:
    """Live deltas as chunk deltas. Text of the shared conversation is `content`; a
    supervisor's worker's own text is `reasoning_content` (shown as the model's thinking by
    chat UIs that read it, ignored by others). A new call's text starts a new paragraph. Sent
    text cannot be taken back, so `finish` makes the content end with the reply whatever
    happened (a call retried, text written beside a tool call)."""

    sent: bool = False
    call: str | None = None
    current: str = ""
    """Content of the latest call since its last reset."""
    broken: bool = False
    thinking: str | None = None

    def take(self, delta: Delta) -> dict[str, str]:
        if not delta.shared:
            lead = "\n\n" if self.thinking not in (None, delta.call) else ""
            self.thinking = delta.call
            return {"reasoning_content": lead + delta.text} if delta.text else {}
        if delta.reset:
            self.current, self.broken = "", self.broken or (delta.call == self.call and self.sent)
            return {}
        lead = ""
        if delta.call != self.call or self.broken:
            lead = "\n\n" if self.sent else ""
            self.call, self.current, self.broken = delta.call, "", False
        self.current += delta.text
        self.sent = self.sent or bool(delta.text)
        return {"content": lead + delta.text} if lead + delta.text else {}

    def finish(self, answer: str) -> str:
        """What to send after the deltas so the content ends with `answer`."""
        if self.current and answer.startswith(self.current):
            return answer[len(self.current):]
        return ("\n\n" if self.sent else "") + answer
