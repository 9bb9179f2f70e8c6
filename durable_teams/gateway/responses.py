"""OpenAI's Responses API in front of durable teams (docs/responses.md). `model` names the
team; a response is a stretch of a thread's log (durable_teams/gateway/responses_view.py), its
id names the thread, turn and log index, so `previous_response_id`, `GET`, polling and
resuming a stream work from any gateway process, after any restart: nothing is kept here.

    POST /v1/responses                       create (stream, background, previous_response_id)
    GET  /v1/responses/{id}                  the response; ?stream=true&starting_after=N resumes
    GET  /v1/responses/{id}/input_items      what the request sent
    POST /v1/responses/{id}/cancel           (refused: turns are not cancellable yet)
    DELETE /v1/responses/{id}                (refused: a response is part of its thread's log)
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.approvals import approval_of
from durable_teams.client.send import submit_turn
from durable_teams.gateway import requests as checks
from durable_teams.gateway import responses_fields as fields
from durable_teams.gateway import responses_state as state
from durable_teams.gateway.chat_history import FieldError
from durable_teams.gateway.openai_compat import caller_scope, input_id, may_stream
from durable_teams.gateway.responses_events import approval_id, events, numbered, response_object
from durable_teams.gateway.responses_view import ResponseRef, UnknownResponse, View
from durable_teams.gateway.sse import openai_error, sse_frame, sse_response
from durable_teams.gateway.threads import Gateway, TeamMismatch


def refusal(status: int, message: str, kind: str, param: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": kind}},
                        status_code=status)


async def create(request: Request) -> Response:
    body = checks.parse_body(await request.body())
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise FieldError("'model' (the team's name) is required", "model")
    team: str = body["model"]
    fields.check(body)
    given = fields.parse_input(body.get("input"))
    gw: Gateway = request.app.state.gateway
    gw.check_team(team)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    stream, background = bool(body.get("stream")), bool(body.get("background"))
    if stream and not may_stream(request):  # before anything goes in
        return refusal(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
    previous = body.get("previous_response_id")
    request_id = hashlib.sha256(json.dumps([caller_scope(request), key or "", previous or "",
                                            body.get("input")], sort_keys=True).encode()).hexdigest()
    if previous is None:
        if given.text is None:
            raise FieldError("'input': an mcp_approval_response answers a response: send its "
                             "previous_response_id", "input")
        ref = await first_turn(gw, team, given.text, key, request_id, body.get("max_output_tokens"), request)
    else:
        try:
            ref = await following(gw, team, ResponseRef.parse(previous), given, request_id,
                                  body.get("max_output_tokens"))
        except Refused as refused:
            return refused.response
    created = await created_at(gw, ref.thread)
    if stream:
        return sse_response(event_stream(gw, ref, team, created, -1, background), {}, openai_error)
    if background:
        view, _ = await state.read(gw, ref)
        return JSONResponse(response_object(view, team, created, background=True))
    view = await state.ended(gw, ref)
    return JSONResponse(response_object(view, team, created))


class Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        super().__init__()
        self.response = response


async def first_turn(gw: Gateway, team: str, text: str, key: str | None, request_id: str,
                     max_tokens: int | None, request: Request) -> ResponseRef:
    """A new thread and its first turn (the same thread again for the same Idempotency-Key)."""
    keyed = hashlib.sha256(f"{getattr(request.state, 'caller', '')}\0{key}".encode()).hexdigest()[:16] if key else None
    thread = f"{team}-resp-{keyed}" if keyed else f"{team}-resp-{uuid.uuid4().hex[:16]}"
    try:
        await gw.start_thread(team, thread, idempotency=keyed)
    except WorkflowAlreadyStartedError:
        if (await gw.memo(thread)).get("team") != team:
            raise checks.BadRequest("this Idempotency-Key started a thread of another team: use a new key",
                                    status=409) from None
    accepted = await submit_turn(gw.client, thread, text, turn_id=input_id(thread, "responses", request_id),
                                 busy_timeout=gw.busy_seconds, max_tokens=max_tokens)
    return ResponseRef(thread, accepted.number, 0, 0)


async def following(gw: Gateway, team: str, previous: ResponseRef, given: fields.Input,
                    request_id: str, max_tokens: int | None) -> ResponseRef:
    """The response to a request continuing `previous`: an answer to its question, or the
    thread's next turn. Only the thread's latest response may be continued (409 naming it); the
    same request sent again gets the response it made the first time."""
    thread = previous.thread
    try:
        if not await gw.running(thread, team):
            raise UnknownResponse(f"no response {previous.id!r}")
    except TeamMismatch as mismatch:
        raise checks.BadRequest(str(mismatch)) from None
    view, status, after = await state.latest(gw, previous)
    turn_id = input_id(thread, "responses", request_id)
    if after is not None:  # continued already: by this very request (a retry), or another
        if after.step == 0 and await gw.client.get_workflow_handle(thread).query(
                "turn_number", turn_id) == after.turn:
            return after
        if after.step > 0 and turn_id in (status.last_input_id, status.previous_input_id):
            return after
        raise Refused(refusal(409, f"{previous.id} is not the thread's latest response: continue "
                                   f"from {view.ref.id} (forks are not supported)", "not_latest_response",
                              "previous_response_id"))
    if not view.ended:
        raise Refused(refusal(409, f"{previous.id} is still {view.status}: wait for it (GET "
                                   f"/v1/responses/{previous.id}) or cancel it", "response_in_progress",
                              "previous_response_id"))
    assert view.end is not None
    if view.stop is not None:  # the question it asked waits: this request answers it
        await answer(gw, view, status, given, turn_id)
        return ResponseRef(thread, previous.turn, view.end, previous.step + 1)
    if given.text is None:
        raise FieldError(f"'input': {previous.id} asked for no approval", "input")
    accepted = await submit_turn(gw.client, thread, given.text, turn_id=turn_id, busy_timeout=gw.busy_seconds,
                                 max_tokens=max_tokens, after_turns=status.turns)
    return ResponseRef(thread, accepted.number, view.end, 0)


async def answer(gw: Gateway, view: View, status: Any, given: fields.Input, input_id_: str) -> None:
    """Answer the question `view` ended with. An approval takes an `mcp_approval_response`
    naming it, or a message that is a clear yes or no (client/approvals.py); anything else is
    a 400, and nothing is sent."""
    stop = view.stop
    assert stop is not None
    question = next(q for q in status.pending if q.tool_call_id == stop.call.id)
    reply: dict[str, Any] = {"input_id": input_id_}
    if stop.approval:
        if given.approval_id is not None:
            if given.approval_id != approval_id(stop.call.id):
                raise FieldError(f"'input': no approval {given.approval_id!r} waits; "
                                 f"{approval_id(stop.call.id)!r} does", "input")
            reply |= {"approved": given.approve, "text": given.reason}
        else:
            decided = approval_of(given.text or "")
            if decided is None:
                raise FieldError(f"'input': {stop.call.name} waits for approval: answer with an "
                                 "mcp_approval_response, or a clear yes or no", "input")
            reply |= {"approved": decided, "text": given.text or ""}
    else:
        if given.text is None:
            raise FieldError("'input': the question waiting is not an approval: answer it with a message", "input")
        reply["text"] = given.text
    await gw.reply(view.ref.thread, question.question_id, **reply)


async def created_at(gw: Gateway, thread: str) -> int:
    """When the response's thread started (a response's own time is not kept durably)."""
    described = await gw.client.get_workflow_handle(thread).describe()
    return int(described.start_time.timestamp()) if described.start_time else 0


async def event_stream(gw: Gateway, ref: ResponseRef, team: str, created: int, after: int,
                       background: bool = False) -> AsyncIterator[str]:
    """The response's events numbered from durable state, from `after + 1` until it ends."""
    sent = after
    async for view in state.views(gw, ref):
        for event in numbered(events(view, team, created, background), sent):
            yield sse_frame(event["type"], event)
            sent = event["sequence_number"]


def ref_of(request: Request) -> ResponseRef:
    return ResponseRef.parse(request.path_params["response"])


async def retrieve(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    ref = ref_of(request)
    team = (await gw.memo(ref.thread)).get("team") or ""
    created = await created_at(gw, ref.thread)
    if request.query_params.get("stream", "").lower() == "true":
        after = request.query_params.get("starting_after")
        start = checks.start_index(after) if after not in (None, "") else -1
        if not may_stream(request):
            return refusal(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
        return sse_response(event_stream(gw, ref, team, created, start), {}, openai_error)
    view, _ = await state.read(gw, ref)
    return JSONResponse(response_object(view, team, created))


async def input_items(request: Request) -> Response:
    """What the request that made the response sent, as the log holds it."""
    gw: Gateway = request.app.state.gateway
    ref = ref_of(request)
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
                items.append({"type": "mcp_approval_response", "id": f"mcpa_{ref.turn}_{ref.start}",
                              "approval_request_id": approval_id(message.tool_call_id or ""),
                              "approve": not (message.content or "").startswith(("The user denied", "Not run:"))})
            break
    return JSONResponse({"object": "list", "data": items, "first_id": items[0]["id"] if items else None,
                         "last_id": items[-1]["id"] if items else None, "has_more": False})


def user_item(ref: ResponseRef, text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msgin_{ref.turn}_{ref.start}", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": text}]}


async def delete(request: Request) -> Response:
    ref_of(request)
    return refusal(409, "a team's responses are its thread's durable log and cannot be deleted one "
                        "by one (they go with the thread, at the namespace's retention)", "not_deletable")


async def cancel(request: Request) -> Response:
    """Refused: a turn cannot be cancelled by the workflow yet (no cancel_turn update); the
    response goes on to its end, which `GET` shows."""
    gw: Gateway = request.app.state.gateway
    view, _ = await state.read(gw, ref_of(request))
    return refusal(409, f"{view.ref.id} is {view.status}: this gateway cannot cancel a team's turn "
                        "(the workflow has no turn cancellation yet)", "not_cancellable")
