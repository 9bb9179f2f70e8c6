"""OpenAI's Responses API in front of durable teams (docs/responses.md). `model` names the
team; a response is a stretch of a thread's log (durable_teams/gateway/doors/responses/from_log.py), its
id names the thread, turn and log index, so `previous_response_id`, `GET`, polling and
resuming a stream work from any gateway process, after any restart: nothing is kept here.

    POST /v1/responses                       create (stream, background, previous_response_id)
    GET  /v1/responses/{id}                  the response; ?stream=true&starting_after=N resumes
    GET  /v1/responses/{id}/input_items      what the request sent
    POST /v1/responses/{id}/cancel           cancel its turn (the workflow's cancel_turn)
    DELETE /v1/responses/{id}                no longer served (its turn stays in the thread's log)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.auth import may_stream
from durable_teams.gateway.core.end_users import check_end_user, end_user
from durable_teams.gateway.core.idempotency import (
    Claim,
    KeyReused,
    caller_key,
    input_id,
    input_taken,
)
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.scopes import caller_scope, scope_of
from durable_teams.gateway.core.sse import openai_error, sse_frame, sse_response
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import live as live
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.events import (
    events,
    numbered,
    response_object,
)
from durable_teams.gateway.doors.responses.forks import forked
from durable_teams.gateway.doors.responses.from_log import ResponseRef, View
from durable_teams.gateway.doors.responses.named import (
    asked_again,
    naming_previous,
    resumed_response,
    visible_response,
)
from durable_teams.gateway.doors.responses.resent import resent
from durable_teams.gateway.doors.responses.turns import (
    AskedAgain,
    NotLatest,
    Refused,
    first_thread,
    first_turn,
    following,
    refusal,
)


async def create(request: Request) -> Response:
    body = checks.parse_body(await request.body())
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise FieldError("'model' (the team's name) is required", "model")
    team: str = body["model"]
    fields.check(body)
    check_end_user(body)
    gw: Gateway = request.app.state.gateway
    gw.check_team(team)
    previous, sent = body.get("previous_response_id"), body.get("input")
    if previous is None and (resumed := await resumed_response(gw, sent, request)) is not None:
        previous, sent = resumed
    given = fields.parse_input(sent, body.get("instructions"), continued=previous is not None)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    stream = bool(body.get("stream"))
    asking = ""  # before the question's text, when an unclear answer is asked again
    if stream and not may_stream(request):  # before anything goes in
        return refusal(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
    request_id = hashlib.sha256(json.dumps([caller_scope(request), key or "", previous or "",
                                            body.get("input")], sort_keys=True).encode()).hexdigest()
    max_tokens = body.get("max_output_tokens")
    with naming_previous():
        thread = input_thread(team, previous, given, key, request)
    # a stream subscribes to its steps and live deltas before its input goes in: it is told of
    # every step and sees every call from its start
    opened = await live.open_stream(gw, thread) if stream and thread else None
    try:
        if previous is None and given.conversation is not None:
            ref = await resent(gw, team, given.conversation, request, max_tokens, end_user(body),
                               resent_claim(request, key, body.get("input"), team))
        elif previous is None:
            assert thread is not None and given.text is not None
            ref = await first_turn(gw, team, thread, given.text, key, request_id, max_tokens, request,
                                   end_user(body))
        else:
            with naming_previous():
                ref = await continued(gw, team, ResponseRef.parse(previous), given, request, request_id,
                                      max_tokens, key, body.get("input"))
        created = await created_at(gw, ref.thread)
    except Refused as refused:
        await live.close_stream(opened)
        return refused.response
    except AskedAgain as asked:
        ref, asking, created = asked.ref, f"{asked} ", None
    except BaseException:
        await live.close_stream(opened)
        raise
    return await answer(gw, ref, team, created, body, opened, asking)


async def answer(gw: Gateway, ref: ResponseRef, team: str, created: int | None, body: dict[str, Any],
                 opened: live.Opened | None, asking: str) -> Response:
    """The response a request made: streamed, as it started (background), or once it ended;
    `store` echoed as sent (the thread keeps its log either way), `asking` before the text of a
    question asked again. What `opened` subscribed is closed by the stream's response however
    it ends (even unread: `sse_response`), here if none is made."""
    store = body.get("store") is not False
    try:
        created = created if created is not None else await created_at(gw, ref.thread)
        if body.get("stream"):
            opened = await live.stream_for(gw, opened, ref)
            return sse_response(event_stream(gw, ref, team, created, -1, opened, bool(body.get("background")),
                                             store, asking), {}, openai_error, close=partial(live.close_stream, opened))
    except BaseException:
        await live.close_stream(opened)
        raise
    if body.get("background"):
        view, _ = await state.read(gw, ref)
        return JSONResponse(response_object(asked_again(view, asking), team, created, background=True,
                                            live=gw.live_responses, store=store))
    view = asked_again(await state.ended(gw, ref), asking)
    return JSONResponse(response_object(view, team, created, live=gw.live_responses, store=store))


def input_thread(team: str, previous: str | None, given: fields.Input, key: str | None,
                 request: Request) -> str | None:
    """The thread a request's input goes to, when known before it goes in (a resent
    conversation's is found as it goes in)."""
    if previous is not None:
        return ResponseRef.parse(previous).thread
    if given.conversation is not None:
        return None
    if given.text is None:
        raise FieldError("'input': an mcp_approval_response answers a response: send its "
                         "previous_response_id", "input")
    return first_thread(team, key, request)


async def continued(gw: Gateway, team: str, previous: ResponseRef, given: fields.Input, request: Request,
                    request_id: str, max_tokens: int | None, key: str | None = None,
                    raw_input: Any = None) -> ResponseRef:
    """The response to a request naming `previous`: on its thread, or on a fork of it. Under an
    Idempotency-Key, its input goes in as the key's (durable_teams/gateway/core/idempotency.py):
    the same request again is the response it made, another request under the key on this
    thread a 409."""
    await visible_response(gw, previous, scope_of(request))  # a refused request takes nothing
    named = input_id(previous.thread, "responses", request_id)  # what a request without a key goes in as
    keyed = None
    if key:
        try:
            keyed = await input_taken(gw.client, previous.thread, caller_key(request, key), previous.id,
                                      json.dumps([team, raw_input], sort_keys=True))
        except KeyReused as reused:
            raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None
    try:
        return await following(gw, team, previous, given, keyed.id if keyed else named, max_tokens,
                               keyed=keyed, earlier_id=named if keyed else None)
    except NotLatest as not_latest:  # an earlier response: continued on a fork of its thread
        claim = Claim(caller_key(request, key), request_id[:32]) if key else None
        return await forked(gw, team, not_latest, given, caller_scope(request), request_id, max_tokens, claim)


def resent_claim(request: Request, key: str | None, sent: Any, team: str) -> Claim | None:
    """What a keyed resent conversation's key stands for: the caller's key and the request's
    content (as an earlier release recorded it: its records still answer)."""
    if not key:
        return None
    digest = hashlib.sha256(json.dumps([None, sent, team], sort_keys=True).encode()).hexdigest()[:32]
    return Claim(caller_key(request, key), digest)


async def created_at(gw: Gateway, thread: str) -> int:
    """When the response's thread started (a response's own time is not kept durably)."""
    described = await gw.client.get_workflow_handle(thread).describe()
    return int(described.start_time.timestamp()) if described.start_time else 0


async def event_stream(gw: Gateway, ref: ResponseRef, team: str, created: int, after: int,
                       opened: live.Opened, background: bool = False,
                       store: bool = True, asking: str = "") -> AsyncIterator[str]:
    """The response's events numbered from durable state, from `after + 1` until it ends, its
    steps as the worker announces them (`opened.steps`, read by `state.views`), with live text
    deltas from `opened.feed` between them (durable_teams/gateway/doors/responses/live.py)."""
    sent = after
    feed = opened.feed
    text = live.LiveText(ref, feed.floor) if feed is not None else None
    try:
        async for got in live.merged(state.views(gw, ref, opened.steps), feed.deltas if feed is not None else None):
            if isinstance(got, View):
                got = asked_again(got, asking)
                for event in numbered(events(got, team, created, background, gw.live_responses), sent):
                    if text is not None and event["type"] == "response.output_text.delta":
                        event = {**event, "delta": text.rest(event["delta"])}
                    if not store and "response" in event:
                        event = {**event, "response": {**event["response"], "store": False}}
                    yield sse_frame(event["type"], event)
                    sent = event["sequence_number"]
                if got.ended:
                    return
            elif text is not None and sent >= live.OPENED and (piece := text.take(got)):
                yield sse_frame("response.output_text.delta", text.event(piece, sent))
    finally:
        await live.close_stream(opened)
