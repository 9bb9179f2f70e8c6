"""The gateway's time travel (durable_teams/client/time_travel.py), behind the same guards as
every route (tokens, Host and Origin checks, JSON bodies, size limits):

    GET  /threads/{id}/checkpoints   the thread's checkpoints, oldest first
    POST /threads/{id}/fork          {"at"?: checkpoint, "message"?: text, "thread_id"?: id}
                                     -> 201 {"thread_id", "forked_from"}; with an
                                     Idempotency-Key, the same request again -> 200, same fork
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.thread_ids import derived_id
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints
from durable_teams.gateway.core import key_records
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.keyed import caller_key
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.threads import Gateway

MAX_CHECKPOINT_CHARS = 64


async def checkpoints(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    thread = checks.thread_id(request.path_params["thread"])
    await gw.visible(thread, scope_of(request))  # no such thread, or another scope's: 404
    try:
        points = await list_checkpoints(gw.client, thread)
    except ReplayFailed as err:
        return checks_error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    return JSONResponse([dataclasses.asdict(p) for p in points])


async def fork_thread(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    thread = checks.thread_id(request.path_params["thread"])
    body = checks.parse_body(await request.body())
    unknown = sorted(set(body) - {"at", "message", "thread_id"})
    if unknown:
        raise checks.BadRequest(f"unknown field(s): {', '.join(unknown)}; a fork takes at, message, thread_id")
    at = checks.text_field(body, "at", required=False)
    if at is not None and (len(at) > MAX_CHECKPOINT_CHARS or not at.isprintable()):
        raise checks.BadRequest("invalid checkpoint id 'at'")
    message = checks.text_field(body, "message", required=False, max_bytes=checks.MAX_TURN_BYTES)
    wanted = checks.text_field(body, "thread_id", required=False)
    if wanted is not None:
        checks.thread_id(wanted, "thread_id")
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    if key and not wanted:  # the same request again names the same fork
        caller = getattr(request.state, "caller", "") or ""
        digest = hashlib.sha256(f"{caller}\0{key}\0{thread}\0{at}\0{message}".encode()).hexdigest()
        wanted = derived_id(thread, f"-fork-{digest[:12]}")  # within the thread id rule
    await gw.visible(thread, scope_of(request))  # no such thread, or another scope's: 404
    claimed = None
    if key:  # the key stands for this fork alone: the same key with another fork is a 409
        claimed = await key_records.claim(gw.client, gw.task_queue, "fork", caller_key(request, key),
                                          json.dumps([thread, at, message, body.get("thread_id")]), wanted or "")
    # the fork keeps the original's memo, its scope with it: the same callers see it
    try:
        forked = await fork(gw.client, thread, at=at, message=message, fork_id=wanted)
    except CheckpointError as err:
        return checks_error(400, str(err), "invalid_checkpoint")
    except ReplayFailed as err:
        return checks_error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    except WorkflowAlreadyStartedError:
        memo = await gw.memo(wanted or "")
        # this request's fork, made before: a fork of a fork is forked from the checkpoint's thread
        if claimed is not None and claimed.thread == wanted and memo.get("forked_from"):
            return JSONResponse({"thread_id": wanted, "forked_from": memo["forked_from"]}, status_code=200)
        return checks_error(409, f"thread {wanted} already exists", "already_exists")
    return JSONResponse({"thread_id": forked.workflow_id, "forked_from": forked.forked_from}, status_code=201)


def checks_error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)
