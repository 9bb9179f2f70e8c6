"""The ASGI app: native endpoints (after ABI's), the OpenAI-compatible endpoint, the inbox.

    POST /threads                       {"team": "acme", "thread_id"?: "...", "task"?: "..."}
    POST /threads/{id}/turns            {"text": "..."}  -> SSE: user_message ... done
    GET  /threads/{id}                  status (pending questions, last reply, ...)
    GET  /threads/{id}/transcript       ?full=true for every agent's private steps
    GET  /threads/{id}/events           ?start=N -> SSE until the conversation ends
    GET  /questions                     every question waiting for a person
    POST /threads/{id}/questions/{qid}  {"text": "..."} or {"approved": true, "text"?: reason}
    POST /v1/chat/completions           OpenAI Chat Completions (model = team)
    GET  /v1/models                     the teams, as OpenAI's model list
    GET  /                              the web inbox
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import ConversationEnded, ReplyRejected
from durable_teams.events import follow
from durable_teams.gateway.auth import DEFAULT_MAX_BODY, Guard
from durable_teams.gateway.openai_compat import chat_completions
from durable_teams.gateway.sse import sse_frame, sse_response
from durable_teams.gateway.threads import Gateway, UnknownTeam
from durable_teams.live import LiveHub, hub_from_env
from durable_teams.workflows.conversation import TeamWorkflow


def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


async def body_of(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HTTPException(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise HTTPException(400, "the body must be a JSON object")
    return body


def text_field(body: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise HTTPException(400, f"'{name}' must be a non-empty string")
    return value


async def start_thread(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    team = text_field(body, "team") or ""
    gw.check_team(team)
    thread = await gw.start_thread(team, text_field(body, "thread_id", False),
                                   text_field(body, "task", False))
    return JSONResponse({"thread_id": thread, "team": team}, status_code=201)


async def send_turn_sse(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    thread = request.path_params["thread"]
    text = text_field(body, "text") or ""
    if not await gw.running(thread):
        return error(404, f"no thread {thread}", "not_found")

    async def frames() -> AsyncIterator[str]:
        async for event in gw.turn_events(thread, text, text_field(body, "sender", False)):
            yield sse_frame(event["type"], event)
    return sse_response(frames(), {"X-Thread-Id": thread})


async def thread_status(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    thread = request.path_params["thread"]
    described = await gw.client.get_workflow_handle(thread).describe()
    status = await gw.status(thread)
    memo = await described.memo()
    return JSONResponse({"thread_id": thread, "team": memo.get("team"),
                         "workflow_status": described.status.name if described.status else None,
                         **status.model_dump(mode="json")})


async def transcript(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    full = request.query_params.get("full", "").lower() in {"1", "true", "yes"}
    messages = await gw.client.get_workflow_handle(request.path_params["thread"]).query(
        TeamWorkflow.transcript, full)
    return JSONResponse([m.model_dump(mode="json") for m in messages])


async def thread_events(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    thread = request.path_params["thread"]
    start = int(request.query_params.get("start", "0") or 0)

    async def frames() -> AsyncIterator[str]:
        async for event in follow(gw.client, thread, start=start, poll_seconds=gw.poll_seconds, live=gw.hub):
            yield sse_frame(event.type, event.model_dump(mode="json"))
    return sse_response(frames())


async def questions(request: Request) -> Response:
    return JSONResponse(await request.app.state.gateway.pending())


async def answer(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    approved = body.get("approved")
    if approved is not None and not isinstance(approved, bool):
        raise HTTPException(400, "'approved' must be true or false")
    reply: dict[str, Any] = {"text": text_field(body, "text", approved is None) or ""}
    if approved is not None:
        reply["approved"] = approved
    qid = await gw.reply(request.path_params["thread"], request.path_params["question"], **reply)
    return JSONResponse({"question_id": qid, "accepted": True})


async def inbox(request: Request) -> Response:
    page = resources.files("durable_teams.gateway").joinpath("inbox.html").read_text("utf-8")
    return HTMLResponse(page)


async def models(request: Request) -> Response:
    """The teams this gateway serves, so chat front ends can offer them as models."""
    gw: Gateway = request.app.state.gateway
    return JSONResponse({"object": "list", "data": [
        {"id": team, "object": "model", "created": 0, "owned_by": "durable-teams"} for team in gw.teams or []]})


async def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def on_unknown_team(request: Request, exc: Exception) -> Response:
    """OpenAI's answer to an unknown model: 404 with code `model_not_found`."""
    return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error",
                                   "code": "model_not_found"}}, status_code=404)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error(exc.status_code, exc.detail)


async def on_temporal_error(request: Request, exc: Exception) -> Response:
    """Typed outcomes as HTTP statuses instead of a 500 with a traceback."""
    if isinstance(exc, ReplyRejected):
        return error(409, str(exc), "reply_rejected")
    if isinstance(exc, ConversationEnded):
        return error(409, str(exc), "conversation_ended")
    if isinstance(exc, WorkflowQueryFailedError):
        return error(409, f"the workflow could not answer: {exc.message}", "query_failed")
    assert isinstance(exc, RPCError)
    if exc.status == RPCStatusCode.NOT_FOUND:
        return error(404, f"not found: {exc.message}", "not_found")
    if exc.status == RPCStatusCode.ALREADY_EXISTS:
        return error(409, f"already exists: {exc.message}", "already_exists")
    return error(502, f"the Temporal server refused the call: {exc.message}", "temporal_error")


def create_app(client: Client, *, task_queue: str, tokens: list[str] | None = None,
               max_body: int = DEFAULT_MAX_BODY, poll_seconds: float = 0.1,
               live_hub: LiveHub | None = None, teams: Sequence[str] | None = None) -> Guard:
    """The gateway as an ASGI app, guarded by `tokens` (none: open) and a body size limit.
    `live_hub`: where live text deltas come from (default: DURABLE_TEAMS_LIVE_URL's broker,
    else this process's, durable_teams/live.py). `teams`: the team names the workers serve
    (listed by /v1/models; another name is refused with 404); None: not checked."""
    routes = [
        Route("/", inbox), Route("/inbox", inbox), Route("/healthz", healthz),
        Route("/threads", start_thread, methods=["POST"]),
        Route("/threads/{thread}", thread_status),
        Route("/threads/{thread}/turns", send_turn_sse, methods=["POST"]),
        Route("/threads/{thread}/transcript", transcript),
        Route("/threads/{thread}/events", thread_events),
        Route("/threads/{thread}/questions/{question}", answer, methods=["POST"]),
        Route("/questions", questions),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models),
    ]
    handlers: dict[Any, Any] = {HTTPException: on_http_error, UnknownTeam: on_unknown_team}
    for kind in (ReplyRejected, ConversationEnded, WorkflowQueryFailedError, RPCError):
        handlers[kind] = on_temporal_error
    app = Starlette(routes=routes, exception_handlers=handlers)
    hub = live_hub or hub_from_env(client.data_converter.payload_codec)
    app.state.gateway = Gateway(client, task_queue, poll_seconds, hub, list(teams) if teams is not None else None)
    return Guard(app, tokens or [], max_body)
