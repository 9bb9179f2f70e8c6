"""`POST /v1/chat/completions` in OpenAI's format, so any OpenAI client or chat UI can talk
to a durable team. `model` names the team; the `X-Thread-Id` header names the thread (a new one
when absent; its id returns in the `X-Thread-Id` header). `user` is what OpenAI documents, an
end user's id: kept in a new thread's memo and, for a client that names no thread, part of its
chat's key (an empty one is absent). Only the last user
message is sent: the thread remembers the rest. A question the team asks comes back as the
assistant's message, and the next request's last user message answers it.

The message is accepted by the thread before any answer goes out (the first stream chunk
included), under an input id derived from the request (`named_input`, `chat_history.request_keys`),
so a client that retries the same request gets the same turn, never a second one.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.approvals import approval_of
from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core import resent_history as chats
from durable_teams.gateway.core.auth import may_stream
from durable_teams.gateway.core.end_users import check_end_user, end_user
from durable_teams.gateway.core.idempotency import KeyedInput, input_id, input_taken, sent_keyed
from durable_teams.gateway.core.outcomes import Outcome, Waiter
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.resent_threads import says_retry
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.sse import once, openai_error, sse_response
from durable_teams.gateway.core.tenant_ids import shown, visible_thread, workflow_id
from durable_teams.gateway.core.threads import Gateway, TeamMismatch
from durable_teams.gateway.doors.openai_chat.fields import (
    Exchange,
    exchange_on,
    max_tokens,
)
from durable_teams.gateway.doors.openai_chat.resent import chat_thread
from durable_teams.gateway.doors.openai_chat.stream import chunk_stream, usage_of
from durable_teams.workflows.conversation_reads import ConversationStatus

log = logging.getLogger("durable_teams.gateway")

TOOLS = "a team's agents use their own tools; tools from the client are not supported"
UNSUPPORTED: dict[str, tuple[tuple[Any, ...], str]] = {
    # field: (the values that ask for nothing, why any other is refused)
    "tools": (([],), TOOLS),
    "functions": (([],), TOOLS.replace("tools from", "functions from")),
    "function_call": (("none", "auto"), TOOLS),
    "parallel_tool_calls": ((), TOOLS),
    "logprobs": ((False,), "log probabilities are not available from a team"),
    "top_logprobs": ((), "log probabilities are not available from a team"),
    "audio": ((), "audio output is not supported"),
    "modalities": ((["text"],), "a team answers in text only"),
    "prediction": ((), "predicted outputs are not supported (a team's answer is several model calls)"),
    "web_search_options": ((), "web search is a tool of an agent's, not of a request"),
}
NUMBERS: dict[str, tuple[float, float, bool]] = {
    # field: (lowest, highest, whole numbers only); checked, then ignored (the agents' own apply)
    "temperature": (0, 2, False), "top_p": (0, 1, False), "presence_penalty": (-2, 2, False),
    "frequency_penalty": (-2, 2, False), "seed": (-2**63, 2**63 - 1, True),
}


def check_fields(body: dict[str, Any]) -> None:
    """Fields a team cannot honour are refused by name, never silently ignored; numbers it
    ignores are still checked (a garbage value is a 400, as OpenAI's)."""
    for name, (harmless, why) in UNSUPPORTED.items():
        value = body.get(name)
        if value is not None and not any(type(value) is type(h) and value == h for h in harmless):
            raise FieldError(f"'{name}': {why}", name)
    for name, (low, high, whole) in NUMBERS.items():
        value = body.get(name)
        kinds = (int,) if whole else (int, float)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)
                                  or not low <= value <= high):
            what = "an integer" if whole else f"a number from {low:g} to {high:g}"
            raise FieldError(f"'{name}' must be {what}", name)
    n = body.get("n")
    if n is not None and (type(n) is not int or n != 1):
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
    if body.get("stream") not in (None, True, False):
        raise FieldError("'stream' must be true or false", "stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict)
                                or options.get("include_usage") not in (None, True, False)):
        raise FieldError("'stream_options' must be an object; its 'include_usage' true or false",
                         "stream_options")
    if body.get("tool_choice") not in (None, "none", "auto"):
        raise FieldError("'tool_choice': tools from the client are not supported", "tool_choice")
    check_end_user(body)


def named_input(thread: str, status: ConversationStatus, text: str, request: Request,
                asked_by: str | None = None) -> tuple[str, bool]:
    """The input id of a request on a named thread, and whether the thread took it already.
    A client that sends only its newest message can repeat it ("another one"): the same text is
    a new input, unless the request is a retry (`says_retry`), the same text the thread
    took last is still being answered, or the message that led to the approval now waiting
    (`asked_by`, see `resends_what_asked`). A request with an `Idempotency-Key` is not
    judged here (durable_teams/gateway/core/idempotency.py)."""
    again = input_id(thread, status.previous_input_id or "", text)
    busy = not status.pending and (status.last_reply is None or status.last_reply.turn < status.turns)
    if status.last_input_id == again and (busy or says_retry(request)):
        return again, True
    if asked_by is not None and resends_what_asked(text, asked_by):
        return again, True  # its outcome is the question waiting now
    return input_id(thread, status.last_input_id or "", text), False


def approval_waits(status: ConversationStatus, request: Request) -> bool:
    """Whether the next message would answer an approval (a tool waiting to run), on a request
    without an `Idempotency-Key` (which decides alone)."""
    return (bool(status.pending) and status.pending[0].kind == "approval"
            and not request.headers.get("idempotency-key"))


MENTION = re.compile(r"^\s*@([\w.-]+)[\s,:]*(.*)$", re.DOTALL)
"""An `@agent` at the start of a turn, which the thread logs without (workflows/roster.py)."""


def resends_what_asked(text: str, said: str) -> bool:
    """Whether `text` is, word for word, what the person said last before the approval waiting
    now (`Gateway.latest_said`: the turn's message, or an answer to a plain question since), so
    most likely a client sending that again, not the person's answer ("yes, zap prod" twice).
    An approval is never given by a retry: the answer must be other words ("yes"), or come
    through `POST /threads/{id}/questions/{qid}`."""
    mention = MENTION.match(text)
    return text == said or (mention is not None and mention.group(2).strip() == said)


async def on_named_thread(gw: Gateway, team: str, header: str, body: dict[str, Any], text: str,
                          request: Request) -> Exchange:
    """The exchange on the thread `X-Thread-Id` names, started when there is none yet: a
    scoped caller's id is its own (`<scope>:X`, or a thread it made under the raw id before:
    core/tenant_ids.py), so another tenant's `X` starts the caller's own thread."""
    scope = scope_of(request)
    try:  # one describe for the caller's own id
        thread, described = await visible_thread(gw, scope, checks.thread_id(header, "X-Thread-Id"))
    except ConversationNotFound:  # none the caller sees (another tenant's raw id included): its own is new
        thread, described = workflow_id(scope, header), None
    try:
        exists = described is not None and await gw.running(thread, team, scope, described)
        await gw.require_worker()  # before a thread starts: a chat never waits on no one (503)
        if not exists:
            try:
                await gw.start_thread(team, thread, user=end_user(body), scope=scope)
            except WorkflowAlreadyStartedError:  # another request started it a moment ago
                await gw.running(thread, team, scope)
    except TeamMismatch as mismatch:
        raise checks.BadRequest(str(mismatch)) from None
    status = await gw.status(thread)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    if key:  # stands for this request alone: a retry reads its first outcome, other text is a 409
        keyed = await input_taken(gw.client, thread, input_id(thread, "idempotency", key), text)
        return await exchange_on(gw, thread, bool(body.get("stream")), partial(
            keyed_exchange, gw, thread, text, keyed, max_tokens(body)))
    # a plain yes or no is an answer even if the person said it before ("yes" to a question,
    # then "yes" to the approval): only other words can be a client sending its turn again
    resend_possible = approval_waits(status, request) and approval_of(text) is None
    asked_by = await gw.latest_said(thread) if resend_possible else None
    key, again = named_input(thread, status, text, request, asked_by)
    return await exchange_on(gw, thread, bool(body.get("stream")), partial(
        gw.begin_exchange, thread, text, key, max_tokens(body), again=again))


async def keyed_exchange(gw: Gateway, thread: str, text: str, keyed: KeyedInput, tokens: int | None) -> Waiter:
    """The exchange of a request under an Idempotency-Key: its first outcome for a retry; else
    sent under the key (`KeyReused` when another request's input under it was taken instead,
    the two sent at once)."""
    if keyed.turn is not None:
        return await gw.begin_exchange(thread, text, keyed.id, tokens, again=True, turn=keyed.turn)
    return await sent_keyed(gw.client, thread, keyed, lambda: gw.begin_exchange(
        thread, text, keyed.id, tokens, update_key=keyed.prefix))


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
    if header is not None:
        checks.thread_id(header, "X-Thread-Id")
    if body.get("stream") and not may_stream(request):  # before anything goes in
        return JSONResponse({"error": {"message": "too many open streams for this caller; try again later",
                                       "type": "rate_limit_exceeded", "param": None, "code": None}},
                            status_code=429, headers={"Retry-After": "1"})
    exchange = await (on_named_thread(gw, team, header, body, text, request) if header
                      else chat_thread(gw, team, history, body, request))
    headers = {"X-Thread-Id": shown(scope_of(request), exchange.thread)}  # the caller's id for it
    if exchange.subscription is not None and exchange.deltas is not None:
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        unsubscribe = once(partial(exchange.subscription.__aexit__, None, None, None))  # even if never read
        return sse_response(chunk_stream(team, exchange.outcome, usage, unsubscribe, exchange.deltas, exchange.mark),
                            headers, openai_error, scope_of(request), close=unsubscribe)
    done = await exchange.outcome()
    if done.kind == "failed":
        return turn_failed(done.text, headers)
    return JSONResponse(completion(team, done._replace(text=done.text + exchange.mark)), headers=headers)


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
