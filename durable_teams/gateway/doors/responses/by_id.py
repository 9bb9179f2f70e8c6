"""The routes on one response, named by its id (docs/responses.md): `GET` (polled or
streamed), `input_items`, `DELETE` (its step hidden: workflows/hidden_steps.py) and `cancel`.
Creating one is durable_teams/gateway/doors/responses/door.py."""

from __future__ import annotations

from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway.core.auth import may_stream
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.sse import openai_error, sse_response
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import live as live
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.door import created_at, event_stream
from durable_teams.gateway.doors.responses.events import (
    approval_id,
    item_suffix,
    response_object,
)
from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse
from durable_teams.gateway.doors.responses.named import (
    visible_response,
)
from durable_teams.gateway.doors.responses.turns import (
    refusal,
)
from durable_teams.workflows.conversation import TeamWorkflow


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
        opened = await live.open_stream(gw, ref.thread)  # joined: the steps and calls from now on
        return sse_response(event_stream(gw, ref, team, created, start, opened), {}, openai_error, scope_of(request),
                            close=partial(live.close_stream, opened))
    view, _ = await state.read(gw, ref)
    return JSONResponse(response_object(view, team, created, live=gw.live_responses))


async def input_items(request: Request) -> Response:
    """What the request that made the response sent, as the log holds it."""
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    await state.read(gw, ref)  # no such response, or a deleted one: 404
    page = await gw.page(ref.thread, ref.start, 20)
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
    its step hidden in the thread's durable state (workflows/hidden_steps.py). Its turn stays
    in the thread's transcript; a running turn goes on (cancel it first to stop it)."""
    gw: Gateway = request.app.state.gateway
    ref = await seen_ref(request)
    await state.read(gw, ref)  # no such response, or deleted already: 404
    try:
        deleted = await hide(gw, ref)
    except WorkflowUpdateFailedError as err:  # a worker that cannot hide steps (older code)
        return refusal(409, f"{ref.id} cannot be deleted: {getattr(err.cause, 'message', err)}", "not_deletable")
    except RPCError as err:  # the thread has closed: its state takes no more changes
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return refusal(409, f"{ref.id} cannot be deleted: its thread has closed", "not_deletable")
    if not deleted:  # another request deleted it meanwhile
        raise UnknownResponse(f"no response {ref.id!r} (deleted)")
    return JSONResponse({"id": ref.id, "object": "response", "deleted": True})


async def hide(gw: Gateway, ref: ResponseRef) -> bool:
    """Hide the response's step (`hide_step`; under its first name on a worker of the release
    before it); False when it was hidden already."""
    handle = gw.client.get_workflow_handle(ref.thread)
    try:
        return await handle.execute_update(TeamWorkflow.hide_step, ref.key)
    except WorkflowUpdateFailedError as err:
        if "expected but not found" not in str(getattr(err.cause, "message", "")):
            raise
    return await handle.execute_update(TeamWorkflow.legacy_hide_step, ref.key)


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
