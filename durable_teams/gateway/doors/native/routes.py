"""The native HTTP API (after ABI's) and the web inbox:

    POST /threads                       {"team": "acme", "thread_id"?: "...", "task"?: "..."}
    POST /threads/{id}/turns            {"text": "..."}  -> SSE: user_message ... done
    GET  /threads/{id}                  status (pending questions, last reply, ...)
    GET  /threads/{id}/transcript       ?full=true for every agent's private steps
    GET  /threads/{id}/events           ?start=N -> SSE until the conversation ends
    GET  /questions                     every question waiting for a person
    POST /threads/{id}/questions/{qid}  {"text": "..."} or {"approved": true, "text"?: reason,
                                        "arguments"?: {...} (a breakpoint's call, edited),
                                        "result"?: "..." (a breakpoint's tool result, edited)}
    GET  /threads/{id}/checkpoints      the thread's checkpoints (time_routes.py)
    POST /threads/{id}/fork             {"at"?: ..., "message"?: ...} -> a new thread from one
    GET  /                              the web inbox (inbox.html)

A scoped caller's `thread_id` X is its own thread, the workflow `<scope>:X`, named X in every
answer; an operator names workflows (durable_teams/gateway/core/tenant_ids.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from functools import cache
from importlib import resources
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from temporalio.client import WorkflowExecutionDescription
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.events import follow
from durable_teams.client.refusals import ConversationNotFound, Patience
from durable_teams.client.send import AcceptedTurn
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.errors import error
from durable_teams.gateway.core.exposure import page_policy
from durable_teams.gateway.core.idempotency import (
    Claim,
    KeyedInput,
    KeyReused,
    caller_key,
    digest_of,
    input_taken,
    sent_keyed,
    start_once,
)
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.sse import once, sse_frame, sse_response
from durable_teams.gateway.core.tenant_ids import found, shown, visible_thread, workflow_id
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.native import time_routes
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.turn_states import answering

log = logging.getLogger(__name__)


async def body_of(request: Request) -> dict[str, Any]:
    return checks.parse_body(await request.body())


async def thread_of(request: Request) -> str:
    """The workflow of the thread the path names, by the caller's id for it (core/tenant_ids.py)."""
    given = checks.thread_id(request.path_params["thread"])
    return await found(request.app.state.gateway, scope_of(request), given)


async def seen_thread(request: Request) -> tuple[str, WorkflowExecutionDescription]:
    """The workflow of the thread the path names, as described, if the caller sees it (else
    `ConversationNotFound`, a 404): one describe for the caller's own id (core/tenant_ids.py)."""
    given = checks.thread_id(request.path_params["thread"])
    return await visible_thread(request.app.state.gateway, scope_of(request), given)


def given_id(request: Request) -> str:
    """The thread's id as the caller named it in the path: the id every answer shows."""
    return str(request.path_params["thread"])


async def check_free(gw: Gateway, scope: str | None, wanted: str) -> None:
    """A scoped caller's id names its own thread `<scope>:id`; one its tenant made under the
    raw id before ids were per tenant is taken too (else the new one would hide it)."""
    if scope is None:
        return
    with contextlib.suppress(ConversationNotFound):
        await gw.visible(wanted, scope)
        raise WorkflowAlreadyStartedError(wanted, "TeamWorkflow")


async def start_thread(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    team = checks.text_field(body, "team") or ""
    gw.check_team(team)
    wanted = checks.text_field(body, "thread_id", required=False)
    scope = scope_of(request)
    if wanted is not None:
        checks.thread_id(wanted, "thread_id")
    task = checks.text_field(body, "task", required=False, max_bytes=checks.MAX_TURN_BYTES)
    if task is not None and not task.strip():
        raise checks.BadRequest("'task' must be a non-empty string (or left out)")
    user = checks.end_user(body)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    keyed = caller_key(request, key) if key else None
    if keyed and not wanted:
        taken = await gw.keyed_by_another_team(team, keyed)
        if taken is not None:
            return error(409, f"this Idempotency-Key started thread {taken} of another team: use a new key",
                         "team_mismatch")
    # a tenant's chosen id is its own (core/tenant_ids.py); an id the key derives is the caller's already
    thread = workflow_id(scope, wanted) if wanted else (f"{team_part(team)}-{keyed[:16]}" if keyed else None)
    shown_id = wanted or thread

    async def start(memo: dict[str, str] | None = None) -> str:
        return await gw.start_thread(team, thread, task, memo=memo, scope=scope, user=user)
    try:
        if wanted is not None:
            await check_free(gw, scope, wanted)
        if keyed is None:
            thread = await start()
        # what the key stands for: the same key with another team or task is another request
        elif not await start_once(gw.client, thread or "", Claim(keyed, digest_of(team, task or "")[:16]), start):
            return JSONResponse({"thread_id": shown_id, "team": team}, status_code=200)  # a retry: its thread
    except WorkflowAlreadyStartedError:
        return error(409, f"thread {shown_id} already exists", "already_exists")
    except KeyReused as reused:
        if reused.memo.get("team") != team:  # the same key, another team: not the request that started it
            return error(409, f"thread {shown_id} belongs to team {reused.memo.get('team')!r}, not {team!r}",
                         "team_mismatch")
        return error(409, f"this Idempotency-Key started thread {shown_id} with another task: use a new key",
                     "idempotency_key_reused")
    return JSONResponse({"thread_id": shown(scope, thread or ""), "team": team}, status_code=201)


async def send_turn_sse(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    thread = await thread_of(request)
    text = checks.turn_text(body)
    sender = checks.sender(body)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    patience = Patience(thread, gw.busy_seconds)  # for the checks before the turn goes in
    if not await gw.patiently(lambda: gw.running(thread, scope=scope_of(request)), patience):
        return error(404, f"no thread {given_id(request)}", "not_found")
    # the key stands for this turn alone: a retry streams it again, other text is a 409
    keyed = await input_taken(gw.client, thread, caller_key(request, key), text, sender or "") if key else None
    # Accepted by the workflow before the first byte goes out: a client that leaves after
    # the 200 finds its turn (and its reply) in the thread.
    # Subscribed to its live deltas and steps first, so a fast model's first words are not missed.
    (index, accepted), subscription, deltas = await gw.subscribed(thread, lambda: keyed_accept(
        gw, thread, text, sender, keyed, patience), steps=True)
    unsubscribe = once(lambda: subscription.__aexit__(None, None, None))  # even if the body never runs

    async def frames() -> AsyncIterator[str]:
        try:
            async for event in gw.turn_events(thread, index, accepted, deltas):
                yield sse_frame(event["type"], event)
        finally:
            await unsubscribe()
    return sse_response(frames(), {"X-Thread-Id": given_id(request)}, scope=scope_of(request), close=unsubscribe)


async def keyed_accept(gw: Gateway, thread: str, text: str, sender: str | None, keyed: KeyedInput | None,
                       patience: Patience) -> tuple[int, AcceptedTurn]:
    """The turn accepted, with the log index its events start from. A keyed turn sent twice at
    once is one turn (one update, named by its key): the twin that came second streams it from
    its start too, unless the turn taken is another request's under the key (`KeyReused`)."""
    def send() -> Awaitable[tuple[int, AcceptedTurn]]:
        return gw.accept_turn(thread, text, sender, keyed.id if keyed else None, patience,
                              keyed.turn if keyed else None, keyed.prefix if keyed else None)
    fresh = keyed is not None and keyed.turn is None
    index, accepted = await (sent_keyed(gw.client, thread, keyed, send) if keyed and fresh else send())
    if keyed is not None and keyed.turn is None:
        start = await gw.turn_start(thread, accepted.number, answering(await gw.status(thread)))
        index = min(index, start) if start is not None else index
    return index, accepted


async def thread_status(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    thread, described = await seen_thread(request)
    status = await gw.status(thread)
    memo = await described.memo()
    shape = status.model_dump(mode="json", exclude={"history_length"})
    if shape.get("forked_from"):  # "<thread>@<checkpoint>", the thread by the caller's id for it
        shape["forked_from"] = shown(scope_of(request), shape["forked_from"])
    return JSONResponse({"thread_id": given_id(request), "team": memo.get("team"),
                         "workflow_status": described.status.name if described.status else None, **shape})


async def transcript(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    full = request.query_params.get("full", "").lower() in {"1", "true", "yes"}
    thread, _ = await seen_thread(request)
    messages = await gw.client.get_workflow_handle(thread).query(TeamWorkflow.transcript, full)
    return JSONResponse([m.model_dump(mode="json") for m in messages])


async def thread_events(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    start = checks.start_index(request.query_params.get("start"))
    thread, _ = await seen_thread(request)  # no such thread (or not the caller's): 404 before the stream

    async def frames() -> AsyncIterator[str]:
        async for event in follow(gw.client, thread, start=start, poll_seconds=gw.poll_seconds, live=gw.hub):
            yield sse_frame(event.type, event.model_dump(mode="json"))
    return sse_response(frames(), scope=scope_of(request))


def _edits(approved: object, reply: dict[str, Any]) -> str:
    """What an idempotency key stands for besides the text: the decision and a breakpoint's edits."""
    if "result" in reply:
        return repr((approved, reply.get("arguments"), reply["result"]))
    return repr(approved) if "arguments" not in reply else repr((approved, reply["arguments"]))


async def questions(request: Request) -> Response:
    scope = scope_of(request)
    waiting = await request.app.state.gateway.pending(scope)
    return JSONResponse([{**q, "thread_id": shown(scope, q["thread_id"])} for q in waiting])


async def answer(request: Request) -> Response:
    body = await body_of(request)
    gw: Gateway = request.app.state.gateway
    approved = body.get("approved")
    if approved is not None and not isinstance(approved, bool):
        raise HTTPException(400, "'approved' must be true or false")
    reply: dict[str, Any] = {"text": checks.text_field(body, "text", required=approved is None,
                                                       max_bytes=checks.MAX_TURN_BYTES) or ""}
    if body.get("arguments") is not None:  # a breakpoint's tool call, resumed with new arguments
        if not isinstance(body["arguments"], dict) or approved is not True:
            raise checks.BadRequest("'arguments' must be a JSON object, sent with approved=true")
        reply["arguments"] = json.dumps(body["arguments"])
    if body.get("result") is not None:  # a breakpoint after a tool call: the result the model sees
        if not isinstance(body["result"], str) or approved is not True:
            raise checks.BadRequest("'result' must be a string, sent with approved=true")
        reply["result"] = checks.text_field(body, "result", required=True, max_bytes=checks.MAX_TURN_BYTES)
    question = request.path_params["question"]
    if len(question) > 64 or not question.isprintable():
        raise checks.BadRequest("invalid question id")
    thread, _ = await seen_thread(request)
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    keyed: KeyedInput | None = None
    if key:  # the key stands for this answer alone: a retry is a 200 again, another answer a 409
        keyed = await input_taken(gw.client, thread, caller_key(request, key), question, reply["text"],
                                  _edits(approved, reply))
        if keyed.turn is not None:
            return JSONResponse({"question_id": question, "accepted": True})
        reply["input_id"] = keyed.id
    if approved is None:  # an approval answered in words: read as the chat reads it
        approved = await gw.approval_in_words(thread, question, reply["text"])
    if approved is not None:
        reply["approved"] = approved
    def send() -> Awaitable[str]:
        return gw.reply(thread, question, keyed.prefix if keyed else None, **reply)
    qid = await (sent_keyed(gw.client, thread, keyed, send) if keyed else send())
    return JSONResponse({"question_id": qid, "accepted": True})


@cache
def inbox_page() -> tuple[str, str]:
    page = resources.files("durable_teams.gateway.doors.native").joinpath("inbox.html").read_text("utf-8")
    return page, page_policy(page)


async def inbox(request: Request) -> Response:
    page, policy = inbox_page()
    return HTMLResponse(page, headers={"Content-Security-Policy": policy, "Cache-Control": "no-store"})


ROUTES = [
    Route("/", inbox), Route("/inbox", inbox),
    Route("/threads", start_thread, methods=["POST"]),
    Route("/threads/{thread}", thread_status),
    Route("/threads/{thread}/turns", send_turn_sse, methods=["POST"]),
    Route("/threads/{thread}/transcript", transcript),
    Route("/threads/{thread}/events", thread_events),
    Route("/threads/{thread}/questions/{question}", answer, methods=["POST"]),
    Route("/threads/{thread}/checkpoints", time_routes.checkpoints),
    Route("/threads/{thread}/fork", time_routes.fork_thread, methods=["POST"]),
    Route("/questions", questions),
]
