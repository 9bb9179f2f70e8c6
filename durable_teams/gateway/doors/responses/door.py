"""OpenAI's Responses API in front of durable teams (docs/responses.md). `model` names the
team; a response is a stretch of a thread's log (durable_teams/gateway/doors/responses/view.py), its
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
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.auth import may_stream
from durable_teams.gateway.core.end_users import check_end_user, end_user
from durable_teams.gateway.core.idempotency import KeyReused, caller_key, claim_record, input_id
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.scopes import caller_scope, scope_of
from durable_teams.gateway.core.sse import openai_error, sse_frame, sse_response
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import live as live
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.events import (
    approval_id,
    events,
    item_suffix,
    numbered,
    response_object,
)
from durable_teams.gateway.doors.responses.forks import forked
from durable_teams.gateway.doors.responses.named import (
    asked_again,
    naming_previous,
    resumed_response,
    visible_response,
)
from durable_teams.gateway.doors.responses.turns import (
    AskedAgain,
    NotLatest,
    Refused,
    first_thread,
    first_turn,
    following,
    refusal,
    resent,
)
from durable_teams.gateway.doors.responses.view import ResponseRef, UnknownResponse, View
from durable_teams.workflows.conversation import TeamWorkflow


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
    # a stream subscribes to live deltas before its input goes in: it sees every call from its start
    feed = await live.open_feed(gw, thread) if stream and thread else None
    try:
        if previous is None and given.conversation is not None:
            await claim(gw, request, key, previous, body.get("input"), team)
            ref = await resent(gw, team, given.conversation, request, max_tokens, end_user(body))
        elif previous is None:
            assert thread is not None and given.text is not None
            await claim(gw, request, key, None, body.get("input"), team)  # another team's thread is another
            ref = await first_turn(gw, team, thread, given.text, key, request_id, max_tokens, request,
                                   end_user(body))
        else:
            with naming_previous():
                ref = await continued(gw, team, ResponseRef.parse(previous), given, request, request_id,
                                      max_tokens, key, body.get("input"))
        created = await created_at(gw, ref.thread)
    except Refused as refused:
        await live.close(feed)
        return refused.response
    except AskedAgain as asked:
        ref, asking = asked.ref, f"{asked} "
        created = await created_at(gw, ref.thread)
    except BaseException:
        await live.close(feed)
        raise
    return await answer(gw, ref, team, created, body, feed, asking)


async def answer(gw: Gateway, ref: ResponseRef, team: str, created: int, body: dict[str, Any],
                 feed: live.Feed | None, asking: str) -> Response:
    """The response a request made: streamed, as it started (background), or once it ended;
    `store` echoed as sent (the thread keeps its log either way), `asking` before the text of a
    question asked again."""
    store = body.get("store") is not False
    if body.get("stream"):
        feed = await live.feed_for(gw, feed, ref)
        return sse_response(event_stream(gw, ref, team, created, -1, bool(body.get("background")), feed, store,
                                         asking), {}, openai_error)
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
    """The response to a request naming `previous`: on its thread, or on a fork of it."""
    await visible_response(gw, previous, scope_of(request))
    await claim(gw, request, key, previous.id, raw_input, team)  # after the 404: a refused request claims nothing
    try:
        return await following(gw, team, previous, given, input_id(previous.thread, "responses", request_id),
                               max_tokens)
    except NotLatest as not_latest:  # an earlier response: continued on a fork of its thread
        return await forked(gw, team, not_latest, given, caller_scope(request), request_id, max_tokens)


async def claim(gw: Gateway, request: Request, key: str | None, *content: Any) -> None:
    """A keyed request that does not start its own thread: the key recorded as standing for
    its content (durable_teams/gateway/core/idempotency.py, `claim_record`), `KeyReused` (409) for other content."""
    if key:
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:32]
        try:
            await claim_record(gw.client, gw.task_queue, "responses", caller_key(request, key), digest,
                               str(content[0] or ""))
        except KeyReused as reused:  # OpenAI's error shape, as a new response's reused key has it
            raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None


async def created_at(gw: Gateway, thread: str) -> int:
    """When the response's thread started (a response's own time is not kept durably)."""
    described = await gw.client.get_workflow_handle(thread).describe()
    return int(described.start_time.timestamp()) if described.start_time else 0


async def event_stream(gw: Gateway, ref: ResponseRef, team: str, created: int, after: int,
                       background: bool = False, feed: live.Feed | None = None,
                       store: bool = True, asking: str = "") -> AsyncIterator[str]:
    """The response's events numbered from durable state, from `after + 1` until it ends, with
    live text deltas from `feed` between them (durable_teams/gateway/doors/responses/live.py)."""
    sent = after
    text = live.LiveText(ref, feed.floor) if feed is not None else None
    try:
        async for got in live.merged(state.views(gw, ref), feed.deltas if feed is not None else None):
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
        await live.close(feed)


def ref_of(request: Request) -> ResponseRef:
    return ResponseRef.parse(request.path_params["response"])


async def seen_ref(request: Request) -> ResponseRef:
    """The response the path names, if the caller's scope sees its thread: else the same 404
    as for a response that does not exist (durable_teams/gateway/core/scopes.py)."""
    ref = ref_of(request)
    await visible_response(request.app.state.gateway, ref, scope_of(request))
    return ref


async def retrieve(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    team = (await gw.memo(ref.thread)).get("team") or ""
    created = await created_at(gw, ref.thread)
    if request.query_params.get("stream", "").lower() == "true":
        after = request.query_params.get("starting_after", "")
        if after and not (after.isascii() and after.isdigit() and len(after) <= 12):
            raise FieldError("'starting_after' must be a sequence number, 0 or more", "starting_after")
        start = int(after) if after else -1
        await state.read(gw, ref)  # an id that names no response: 404 before the stream starts
        if not may_stream(request):
            return refusal(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
        feed = await live.open_feed(gw, ref.thread)  # joined: the calls made from now on
        return sse_response(event_stream(gw, ref, team, created, start, feed=feed), {}, openai_error)
    view, _ = await state.read(gw, ref)
    return JSONResponse(response_object(view, team, created, live=gw.live_responses))


async def input_items(request: Request) -> Response:
    """What the request that made the response sent, as the log holds it."""
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    await state.read(gw, ref)  # no such response, or a deleted one: 404
    page = await gw._page(ref.thread, ref.start, 20)
    items: list[dict[str, Any]] = []
    for message in page.messages:
        if ref.step == 0 and message.role == "user" and message.agent_run == 0 and message.kind == "message":
            items.append(user_item(ref, message.content or ""))
            break
        if ref.step > 0 and message.role == "tool":
            if message.kind == "human":
                items.append(user_item(ref, message.content or ""))
            else:
                items.append({"type": "mcp_approval_response", "id": f"mcpa_{item_suffix(ref)}",
                              "approval_request_id": approval_id(message.tool_call_id or ""),
                              "approve": not (message.content or "").startswith(("The user denied", "Not run:"))})
            break
    return JSONResponse({"object": "list", "data": items, "first_id": items[0]["id"] if items else None,
                         "last_id": items[-1]["id"] if items else None, "has_more": False})


def user_item(ref: ResponseRef, text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msgin_{item_suffix(ref)}", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": text}]}


async def delete(request: Request) -> Response:
    """Delete a response: no longer served (GET, input_items, cancel, DELETE and
    `previous_response_id` naming it are 404s, from every gateway process, after restarts),
    marked in the thread's durable state (workflows/deletions.py). Its turn stays in the
    thread's transcript; a running turn goes on (cancel it first to stop it)."""
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    await state.read(gw, ref)  # no such response, or deleted already: 404
    try:
        deleted = await gw.client.get_workflow_handle(ref.thread).execute_update(
            TeamWorkflow.delete_response, ref.key)
    except WorkflowUpdateFailedError as err:  # a worker without delete_response (older code)
        return refusal(409, f"{ref.id} cannot be deleted: {getattr(err.cause, 'message', err)}", "not_deletable")
    except RPCError as err:  # the thread has closed: its state takes no more changes
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return refusal(409, f"{ref.id} cannot be deleted: its thread has closed", "not_deletable")
    if not deleted:  # another request deleted it meanwhile
        raise UnknownResponse(f"no response {ref.id!r} (deleted)")
    return JSONResponse({"id": ref.id, "object": "response", "deleted": True})


async def cancel(request: Request) -> Response:
    """Cancel the turn a response runs (the workflow's `cancel_turn`: its activities and tools
    are told, nothing further starts); the response ends "cancelled". One that ended already
    is a 409, except a cancelled one, returned again."""
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    team = (await gw.memo(ref.thread)).get("team") or ""
    view, _ = await state.read(gw, ref)
    if view.ended and view.status != "cancelled":
        return refusal(409, f"{ref.id} is {view.status} already: nothing to cancel", "not_cancellable")
    if not view.ended:
        try:
            await gw.client.get_workflow_handle(ref.thread).execute_update(TeamWorkflow.cancel_turn, ref.turn)
        except WorkflowUpdateFailedError as err:  # ended meanwhile, or a worker without cancel_turn
            view, _ = await state.read(gw, ref)
            if not view.ended:
                return refusal(409, f"{ref.id} cannot be cancelled: {getattr(err.cause, 'message', err)}",
                               "not_cancellable")
    view = await state.ended(gw, ref)
    return JSONResponse(response_object(view, team, await created_at(gw, ref.thread), live=gw.live_responses))
