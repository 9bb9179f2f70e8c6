"""`POST /v1/chat/completions` in OpenAI's format, so any OpenAI client or chat UI can talk
to a durable team. `model` names the team; the `X-Thread-Id` header names the thread (a new one
when absent; its id returns in the `X-Thread-Id` header). `user` is what OpenAI documents, an
end user's id: kept in a new thread's memo, never taken as the thread. Only the last user
message is sent: the thread remembers the rest. A question the team asks comes back as the
assistant's message, and the next request's last user message answers it.

The message is accepted by the thread before any answer goes out (the first stream chunk
included), under a turn id derived from the thread and the request, so a client that retries
the same request gets the same turn, never a second one.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.client.send import ConversationEnded
from durable_teams.gateway import chat_history as chats
from durable_teams.gateway import requests as checks
from durable_teams.gateway.chat_history import FieldError
from durable_teams.gateway.sse import openai_error, sse_frame, sse_response
from durable_teams.gateway.threads import Gateway, Outcome, TeamMismatch
from durable_teams.live.hub import Delta
from durable_teams.workflows.usage import Tally

UNSUPPORTED = {
    "tools": "a team's agents use their own tools; tools from the client are not supported",
    "functions": "a team's agents use their own tools; functions from the client are not supported",
    "logprobs": "log probabilities are not available from a team",
    "top_logprobs": "log probabilities are not available from a team",
    "audio": "audio output is not supported",
}


def check_fields(body: dict[str, Any]) -> None:
    """Fields a team cannot honour are refused by name, never silently ignored."""
    for name, why in UNSUPPORTED.items():
        if body.get(name) not in (None, False, [], {}):
            raise FieldError(f"'{name}': {why}", name)
    n = body.get("n", 1)
    if n not in (None, 1):
        raise FieldError("'n': a team gives one answer per message (n must be 1)", "n")
    fmt = body.get("response_format")
    if fmt not in (None, {"type": "text"}) and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        raise FieldError("'response_format': a team answers in text; structured output is set "
                         "on the team (Supervisor(..., output_type=...)), not per request",
                         "response_format")
    stop = body.get("stop")
    if stop not in (None, "", []):
        raise FieldError("'stop': a team's answer is several model calls, not one completion; stop "
                         "sequences are not supported", "stop")
    max_tokens(body)
    if body.get("tool_choice") not in (None, "none", "auto"):
        raise FieldError("'tool_choice': tools from the client are not supported", "tool_choice")
    user = body.get("user")
    if user is not None and (not isinstance(user, str) or len(user) > checks.MAX_NAME_CHARS):
        raise FieldError(f"'user' must be a string of at most {checks.MAX_NAME_CHARS} characters", "user")
    if isinstance(user, str):
        checks.encodable(user, "user")


async def on_named_thread(gw: Gateway, team: str, header: str, body: dict[str, Any]) -> str:
    """The thread `X-Thread-Id` names, started when there is none yet."""
    thread = checks.thread_id(header, "X-Thread-Id")
    try:
        exists = await gw.running(thread, team)
    except TeamMismatch as mismatch:
        raise checks.BadRequest(str(mismatch)) from None
    return thread if exists else await gw.start_thread(team, thread, user=body.get("user"))


async def chat_thread(gw: Gateway, team: str, history: chats.ChatHistory, body: dict[str, Any],
                      scope: str) -> str:
    """The thread a history-resending client continues (durable_teams/gateway/chat_history.py),
    or a new one that opens with the earlier messages, closed when its chat goes quiet."""
    if history.earlier:
        found = await chats.find_thread(gw, scope, team, history, gw.chat_lookup_seconds)
        if found is not None:
            return found
    return await gw.start_thread(team, chats.new_thread_id(scope, team, history), user=body.get("user"),
                                 history=history.earlier, idle_close_seconds=gw.chat_idle_seconds)


def caller_scope(request: Request) -> str:
    """The caller's token (a digest of it), whose threads only its requests continue."""
    caller = getattr(request.state, "caller", "")
    return caller if caller.startswith("token:") else ""


def max_tokens(body: dict[str, Any]) -> int | None:
    """`max_completion_tokens` (or the older `max_tokens`): a positive integer, or None."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1_000_000:
            raise FieldError(f"'{name}' must be an integer from 1 to 1000000", name)
        return value
    return None


def turn_key(thread: str, messages: list[Any], text: str) -> str:
    """The turn id of this request: the same request sent again (a client's retry) is the
    same turn; the next message of the conversation is another."""
    digest = hashlib.sha256(f"{thread}\0{len(messages)}\0{text}".encode()).hexdigest()
    return f"chat-{digest[:32]}"


async def chat_completions(request: Request) -> Response:
    body = checks.parse_body(await request.body())
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise FieldError("'model' (the team's name) is required", "model")
    team: str = body["model"]
    check_fields(body)
    history = chats.chat_history(body.get("messages"))
    text = history.text
    gw: Gateway = request.app.state.gateway
    gw.check_team(team)
    header = request.headers.get("x-thread-id")
    thread = await (on_named_thread(gw, team, header, body) if header
                    else chat_thread(gw, team, history, body, caller_scope(request)))
    headers = {"X-Thread-Id": thread}
    if body.get("stream"):
        # Subscribed before the turn goes in (its first deltas must not be missed), and the
        # turn accepted (or the question answered) before any byte of the answer goes out.
        subscription = gw.hub.subscribe(thread)
        deltas = await subscription.__aenter__()
        try:
            outcome = await gw.begin_exchange(thread, text, turn_key(thread, body["messages"], text), max_tokens(body))
        except BaseException:
            await subscription.__aexit__(None, None, None)
            raise
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return sse_response(_stream(team, outcome, usage, subscription, deltas), headers, openai_error)
    outcome = await gw.begin_exchange(thread, text, turn_key(thread, body["messages"], text), max_tokens(body))
    done = await outcome()
    if done.kind == "failed":
        return turn_failed(done.text, headers)
    return JSONResponse(completion(team, done), headers=headers)


def turn_failed(text: str, headers: dict[str, str]) -> JSONResponse:
    """A failed turn (the model call failed, say) as OpenAI's error: 502, the reason in the
    message. Retrying the same request returns the same turn, not a new run."""
    return JSONResponse({"error": {"message": text, "type": "turn_failed", "param": None,
                                   "code": "turn_failed"}}, status_code=502, headers=headers)


def completion(team: str, done: Outcome) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": team, "system_fingerprint": done.kind,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": done.text},
                     "finish_reason": done.finish_reason}],
        "usage": usage_of(done.usage),
    }


def usage_of(tally: Tally | None) -> dict[str, int]:
    """OpenAI's usage: the tokens of every model call of the turn (nested teams included);
    zeros for a question (its turn goes on, counted when it ends)."""
    tally = tally or Tally()
    return {"prompt_tokens": tally.input_tokens, "completion_tokens": tally.output_tokens,
            "total_tokens": tally.total_tokens}


async def _stream(team: str, outcome: Callable[[], Awaitable[Outcome]], usage: bool,
                  subscription: AbstractAsyncContextManager[Any], deltas: asyncio.Queue[Delta]
                  ) -> AsyncIterator[str]:
    """OpenAI's chunk stream: the team's text as its model calls write it (live deltas,
    durable_teams/live/hub.py), then what is left of the reply (all of it without live deltas)."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": team}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse_frame(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    yield chunk({"role": "assistant", "content": ""})
    content = ContentStream()
    exchange = asyncio.ensure_future(outcome())
    exchange.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        async for delta in until_done(exchange, deltas):
            piece = content.take(delta)
            if piece:
                yield chunk(piece)
        kind, answer, tally, finish = exchange.result()
    except ConversationEnded as ended:  # the status is sent already: OpenAI's in-stream error
        yield sse_frame(None, {"error": {"message": str(ended), "type": "conversation_ended"}})
        return
    finally:
        exchange.cancel()  # the client left: stop waiting (the turn goes on in the workflow)
        await subscription.__aexit__(None, None, None)  # entered by the caller, before the turn
    if kind == "failed":
        yield sse_frame(None, {"error": {"message": answer, "type": "turn_failed", "code": "turn_failed"}})
        return
    rest = content.finish(answer)
    if rest:
        yield chunk({"content": rest})
    yield chunk({}, finish)
    if usage:
        yield sse_frame(None, {**base, "choices": [], "usage": usage_of(tally)})
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
