"""The gateway's time travel (durable_teams/client/time_travel.py), behind the same guards as
every route (tokens, Host and Origin checks, JSON bodies, size limits):

    GET  /threads/{id}/checkpoints   the thread's checkpoints, oldest first
    POST /threads/{id}/fork          {"at"?: checkpoint, "message"?: text, "thread_id"?: id}
                                     -> 201 {"thread_id", "forked_from"}; with an
                                     Idempotency-Key, the same request again -> 200, same fork
                                     (the key names the fork: core/idempotency.py's `start_once`)
"""

from __future__ import annotations

import dataclasses
import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.thread_ids import derived_id
from durable_teams.client.time_travel import CheckpointError, Forked, fork, list_checkpoints
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.idempotency import (
    Claim,
    KeyReused,
    caller_key,
    digest_of,
    start_once,
)
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.tenant_ids import found, shown, visible_thread, workflow_id
from durable_teams.gateway.core.threads import Gateway

MAX_CHECKPOINT_CHARS = 64


async def checkpoints(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    # no such thread, or another scope's: 404 (one describe for the caller's own id)
    thread, _ = await visible_thread(gw, scope_of(request), checks.thread_id(request.path_params["thread"]))
    try:
        points = await list_checkpoints(gw.client, thread)
    except ReplayFailed as err:
        return checks_error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    return JSONResponse([dataclasses.asdict(p) for p in points])


async def fork_thread(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    scope = scope_of(request)
    thread = await found(gw, scope, checks.thread_id(request.path_params["thread"]))
    body = checks.parse_body(await request.body())
    unknown = sorted(set(body) - {"at", "message", "thread_id"})
    if unknown:
        raise checks.BadRequest(f"unknown field(s): {', '.join(unknown)}; a fork takes at, message, thread_id")
    at = checks.text_field(body, "at", required=False)
    if at is not None and (len(at) > MAX_CHECKPOINT_CHARS or not at.isprintable()):
        raise checks.BadRequest("invalid checkpoint id 'at'")
    message = checks.text_field(body, "message", required=False, max_bytes=checks.MAX_TURN_BYTES)
    wanted = checks.text_field(body, "thread_id", required=False)
    if wanted is not None:  # a tenant's chosen id is its own (core/tenant_ids.py)
        wanted = workflow_id(scope, checks.thread_id(wanted, "thread_id"))
    key = checks.idempotency_key(request.headers.get("idempotency-key"))
    keyed = caller_key(request, key) if key else None
    if keyed and not wanted:  # the key names the fork: the same request again finds it
        wanted = derived_id(thread, f"-fork-{digest_of(keyed, thread)[:12]}")  # within the thread id rule
    await gw.visible(thread, scope)  # no such thread, or another scope's: 404

    made: list[Forked] = []

    async def start(memo: dict[str, str] | None = None) -> None:
        # the fork keeps the original's memo, its scope with it: the same callers see it
        made.append(await fork(gw.client, thread, at=at, message=message, fork_id=wanted, memo=memo))
    try:
        if keyed is None:
            await start()
        else:  # a key stands for one fork of this thread: another checkpoint or message is a 409
            digest = digest_of(json.dumps([thread, at, message, body.get("thread_id")]))[:32]
            await start_once(gw.client, wanted or "", Claim(keyed, digest), start)
    except CheckpointError as err:
        return checks_error(400, str(err), "invalid_checkpoint")
    except ReplayFailed as err:
        return checks_error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    except KeyReused as reused:
        return checks_error(409, reused.detail, reused.kind)
    except WorkflowAlreadyStartedError:
        return checks_error(409, f"thread {shown(scope, wanted or '')} already exists", "already_exists")
    if made:
        return JSONResponse({"thread_id": shown(scope, made[0].workflow_id),
                             "forked_from": shown(scope, made[0].forked_from)}, status_code=201)
    # this request's fork, made before: a fork of a fork is forked from the checkpoint's thread
    origin = (await gw.memo(wanted or "")).get("forked_from")
    return JSONResponse({"thread_id": shown(scope, wanted or ""), "forked_from": origin and shown(scope, origin)})


def checks_error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)
