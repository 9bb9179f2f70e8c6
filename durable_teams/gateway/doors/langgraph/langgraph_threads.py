"""The LangGraph door's threads: create (a conversation of the team its `graph_id` names),
get, search, delete, copy (a fork at the latest turn's end), state and history (the thread's
checkpoints, durable_teams/client/checkpoints.py)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.start import start_conversation
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints, transcripts_at
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.errors import error
from durable_teams.gateway.core.scopes import SCOPE_MEMO, scope_of, sees
from durable_teams.gateway.core.tenant_ids import owned, shown, workflow_id
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_checks import (
    optional_object,
    optional_text,
    page,
    whole,
)
from durable_teams.gateway.doors.langgraph.langgraph_edits import (
    Staged,
    staged_of,
    staged_values,
    turn_agent,
    with_turn,
)
from durable_teams.gateway.doors.langgraph.langgraph_edits import update_state as update_state
from durable_teams.gateway.doors.langgraph.langgraph_reading import (
    METADATA_CLIENT,
    METADATA_MEMO,
    Snapshot,
    snapshot,
    turn_metadata,
)
from durable_teams.gateway.doors.langgraph.langgraph_tenancy import thread_in
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    Unsupported,
    interrupts_of,
    next_of,
    tasks_of,
    thread_object,
    values_of,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ClientMetadata, ConversationInput

THREAD_STATES = ("idle", "busy", "interrupted", "error")
"""The statuses a LangGraph thread may have (a filter of `threads.search`)."""
MAX_LISTED = 1000
"""Threads a search reads from the visibility store at most."""


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def body_of(request: Request, empty_ok: bool = True) -> dict[str, Any]:
    raw = await request.body()
    return {} if empty_ok and not raw.strip() else checks.parse_body(raw)


def team_for(gw: Gateway, metadata: dict[str, Any]) -> str:
    """The team a new thread runs: its `graph_id` (or `assistant_id`), else the gateway's one team."""
    team = metadata.get("graph_id") or metadata.get("assistant_id")
    if team is None and gw.teams is not None and len(gw.teams) == 1:
        team = gw.teams[0]
    if not isinstance(team, str) or not team:
        raise checks.BadRequest("name the thread's team: threads.create(graph_id=TEAM) (metadata.graph_id); "
                                "this gateway serves several teams (or does not list them)")
    gw.check_team(team)
    return team


async def new_thread(gw: Gateway, team: str, scope: str | None, thread: str | None,
                     metadata: dict[str, Any]) -> str:
    """Start a conversation of `team` (a new id when `thread` is None), kept to `scope`'s callers."""
    thread = thread or workflow_id(scope, str(uuid.uuid4()))
    extra = {k: v for k, v in metadata.items() if k not in ("graph_id", "assistant_id")}
    memo = ({SCOPE_MEMO: scope} if scope else {}) | {"team": team} | ({METADATA_MEMO: extra} if extra else {})
    inp = ConversationInput(team_name=team, task=None, single_turn=False, history=[], answer_history=False)
    await start_conversation(gw.client, team, inp, id=thread, task_queue=gw.task_queue, memo=memo,
                             id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
    return thread


async def create(request: Request) -> Response:
    gw, body = gateway_of(request), await body_of(request)
    unknown = sorted(set(body) - {"thread_id", "metadata", "if_exists"})
    if unknown:
        raise Unsupported(f"thread parameter(s) {', '.join(unknown)}")
    metadata = optional_object(body, "metadata")
    wanted = optional_text(body, "thread_id")
    if wanted is not None:
        checks.thread_id(wanted, "thread_id")
    if_exists = body.get("if_exists") or "raise"
    if if_exists not in ("raise", "do_nothing"):
        raise checks.BadRequest("'if_exists' is 'raise' or 'do_nothing'")
    team, scope = team_for(gw, metadata), scope_of(request)
    try:  # a tenant's ids are its own: another's thread of this id is not this one (langgraph_tenancy.py)
        thread = await new_thread(gw, team, scope, wanted and workflow_id(scope, wanted), metadata)
    except WorkflowAlreadyStartedError:
        if if_exists == "do_nothing":
            return JSONResponse((await snapshot(gw, workflow_id(scope, str(wanted)), scope)).as_thread())
        return error(409, f"thread {wanted} already exists", "already_exists")
    extra = {k: v for k, v in metadata.items() if k not in ("graph_id", "assistant_id")}
    return JSONResponse(thread_object(shown(scope, thread), team, datetime.now(UTC), extra, "idle", {"messages": []}, []))


async def get(request: Request) -> Response:
    return JSONResponse((await snapshot(gateway_of(request), thread_in(request), scope_of(request))).as_thread())


async def update(request: Request) -> Response:
    """`threads.update(metadata=...)`: merged into the thread's metadata, key by key, in the
    conversation's memo (where `threads.search(metadata=...)` finds it)."""
    gw, thread, body = gateway_of(request), thread_in(request), await body_of(request)
    unknown = sorted(k for k, v in body.items() if v is not None and k != "metadata")
    if unknown:
        raise Unsupported(f"thread update parameter(s) {', '.join(unknown)}")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise checks.BadRequest("'metadata' is an object")
    if {"graph_id", "assistant_id"} & set(metadata):
        raise checks.BadRequest("a thread's graph_id and assistant_id are its team's name: they are not updated")
    await gw.visible(thread, scope_of(request))
    await gw.require_worker()
    await gw.client.get_workflow_handle(thread).execute_update(
        TeamWorkflow.set_client_metadata, ClientMetadata(client=METADATA_CLIENT, metadata=metadata))
    return JSONResponse((await snapshot(gw, thread, scope_of(request))).as_thread())


async def delete(request: Request) -> Response:
    gw, thread = gateway_of(request), thread_in(request)
    await gw.visible(thread, scope_of(request))
    handle = gw.client.get_workflow_handle(thread)
    await gw.client.workflow_service.delete_workflow_execution(DeleteWorkflowExecutionRequest(
        namespace=gw.client.namespace, workflow_execution=WorkflowExecution(workflow_id=handle.id)))
    return Response(status_code=204)


async def search(request: Request) -> Response:
    gw, body = gateway_of(request), await body_of(request)
    unknown = sorted(k for k, v in body.items() if v and k not in ("metadata", "ids", "status", "limit", "offset"))
    if unknown:
        raise Unsupported(f"thread search parameter(s) {', '.join(unknown)}")
    metadata, ids, wanted = optional_object(body, "metadata"), body.get("ids"), body.get("status")
    offset, limit = page(body)
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise checks.BadRequest("'ids' is a list of thread ids")
    wanted_ids = None if ids is None else {workflow_id(scope_of(request), i) for i in ids}  # looked up once each
    if wanted is not None and wanted not in THREAD_STATES:
        raise checks.BadRequest(f"'status' is one of {', '.join(THREAD_STATES)}")
    scope = scope_of(request)
    queue = gw.task_queue.replace("\\", "\\\\").replace("'", "\\'")
    found = []
    async for wf in gw.client.list_workflows(f"WorkflowType = 'TeamWorkflow' AND TaskQueue = '{queue}'",
                                             limit=MAX_LISTED):
        try:
            memo = await wf.memo()
        except Exception:  # noqa: BLE001 - a memo this gateway cannot read is no scope's
            continue
        given = {"graph_id": memo.get("team"), "assistant_id": memo.get("team"), **(memo.get(METADATA_MEMO) or {})}
        if not sees(scope, memo) or not owned(scope, wf.id) or any(given.get(k) != v for k, v in metadata.items()):
            continue
        if wanted_ids is None or wf.id in wanted_ids:
            found.append(wf.id)
    threads: list[dict[str, Any]] = []
    skipped = 0
    for thread in found if wanted is not None else found[offset:offset + limit]:
        if len(threads) >= limit:
            break
        seen = (await snapshot(gw, thread, scope)).as_thread()
        if wanted is not None and seen["status"] != wanted:
            continue
        if wanted is not None and skipped < offset:  # the offset counts matching threads
            skipped += 1
            continue
        threads.append(seen)
    return JSONResponse(threads)


async def copy(request: Request) -> Response:
    gw, thread = gateway_of(request), thread_in(request)
    await gw.visible(thread, scope_of(request))
    try:  # the fork keeps the original's memo: its team, its scope
        forked = await fork(gw.client, thread, fork_id=workflow_id(scope_of(request), str(uuid.uuid4())))
    except CheckpointError as err:
        return error(409, str(err), "invalid_checkpoint")
    except ReplayFailed as err:
        return error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    seen = await snapshot(gw, forked.workflow_id, scope_of(request))
    return JSONResponse(seen.as_thread())


async def state(request: Request) -> Response:
    gw = gateway_of(request)
    seen = await snapshot(gw, thread_in(request), scope_of(request))
    pending = seen.status.pending
    interrupts, tasks = interrupts_of(pending), tasks_of(pending)
    staged = staged_of(seen)  # an update_state waiting for a run: the state as it left it
    if staged is not None:
        return JSONResponse(await staged_state(gw, seen, staged))
    return JSONResponse({"values": seen.values(), "next": next_of(pending),
                         "checkpoint": {"thread_id": seen.shown, "checkpoint_ns": "", "checkpoint_id": None,
                                        "checkpoint_map": None},
                         "metadata": {**(await turn_metadata(gw, seen.thread, seen.status.turns) or {}),
                                      "graph_id": seen.team, "assistant_id": seen.team},
                         "created_at": None, "parent_checkpoint": None,
                         "tasks": tasks, "interrupts": interrupts})


async def history(request: Request) -> Response:
    """The thread's checkpoints, newest first: each one's values (the conversation as it stood
    there, rebuilt from the thread's history), and its kind, turn, agent and description in its
    metadata."""
    gw, thread, body = gateway_of(request), thread_in(request), await body_of(request)
    unknown = sorted(k for k, v in body.items() if v and k not in ("limit", "before"))
    if unknown:
        raise Unsupported(f"history parameter(s) {', '.join(unknown)}")
    limit, before = whole(body, "limit", 10, 1), body.get("before")
    if isinstance(before, dict):
        before = before.get("checkpoint_id")
    if before is not None and not isinstance(before, str):
        raise checks.BadRequest("'before' is a checkpoint ({'checkpoint_id': ...}) or its id")
    await gw.visible(thread, scope_of(request))
    try:
        chronological = await list_checkpoints(gw.client, thread)
        points = list(reversed(chronological))
    except ReplayFailed as err:
        return error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    if before is not None:
        ids = [p.id for p in points]
        points = points[ids.index(before) + 1:] if before in ids else []
    try:
        transcripts = await transcripts_at(gw.client, thread, points[:limit])
    except ReplayFailed as err:
        return error(409, f"this thread's history does not replay here: {err}", "replay_failed")
    states: list[dict[str, Any]] = []
    named = shown(scope_of(request), thread)
    seen = await snapshot(gw, thread, scope_of(request)) if before is None else None
    staged = staged_of(seen) if seen is not None else None
    if seen is not None and staged is not None:  # an update_state waiting for a run: the newest
        states.append(await staged_state(gw, seen, staged))
        limit -= 1
    for n, point in enumerate(points[:limit]):
        parent = points[n + 1].id if n + 1 < len(points) else None
        values = values_of(with_turn(point, transcripts[point.id])) if point.id in transcripts else {}
        agent = turn_agent(chronological, point) if point.kind == "turn" else None
        after = [agent] if agent else []  # at a turn's start its agent answers it next
        states.append({"values": values, "next": after, "tasks": [], "interrupts": [], "created_at": None,
                       "checkpoint": {"thread_id": named, "checkpoint_ns": "", "checkpoint_id": point.id},
                       "parent_checkpoint": {"thread_id": named, "checkpoint_ns": "", "checkpoint_id": parent}
                       if parent else None,
                       "metadata": {"source": point.kind, **dataclasses.asdict(point)}})
    return JSONResponse(states)


async def staged_state(gw: Gateway, seen: Snapshot, staged: Staged) -> dict[str, Any]:
    """The state an update left (langgraph_edits.py): a checkpoint, child of the one it names,
    whose next is the agent that answers the message."""
    parent = staged.parent and {"thread_id": seen.shown, "checkpoint_ns": "", "checkpoint_id": staged.parent}
    return {"values": await staged_values(gw, seen, staged), "next": [staged.agent] if staged.agent else [],
            "tasks": [], "interrupts": [], "created_at": None,
            "checkpoint": {"thread_id": seen.shown, "checkpoint_ns": "", "checkpoint_id": staged.checkpoint_id,
                           "checkpoint_map": None},
            "parent_checkpoint": parent or None,
            "metadata": {"source": "update", "graph_id": seen.team, "assistant_id": seen.team, "writes": None}}
