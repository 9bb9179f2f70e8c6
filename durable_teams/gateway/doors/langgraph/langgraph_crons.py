"""The LangGraph door's crons, on Temporal Schedules (the server keeps and fires them: no
gateway needs to run for a cron to fire). A cron of a thread (`crons.create_for_thread`) starts
a `ScheduledTurnWorkflow` at each firing, which posts the cron's message to the thread as a
turn (queued behind its other turns: multitask_strategy "enqueue"); a cron of an assistant
(`crons.create`) starts a new thread of the team at each firing, its message as the task.
A cron's `webhook=` is told of each run it fires once the run ends (the rule of a run's
webhook, langgraph_webhooks.py): its firings start a `ScheduledTurnWorkflow` that begins the
run and then its `RunWebhookWorkflow`. The cron's id is the schedule's; its scope and team
are in the schedule's memo (its webhook's URL only in the schedule's action)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleDescription,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.start import TASK_TIMEOUT
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.scopes import SCOPE_MEMO, scope_of, sees
from durable_teams.gateway.core.tenant_ids import shown, workflow_id
from durable_teams.gateway.core.threads import TeamMismatch
from durable_teams.gateway.doors.langgraph.langgraph_checks import (
    optional_flag,
    optional_object,
    optional_text,
    page,
)
from durable_teams.gateway.doors.langgraph.langgraph_cron_times import never_fires
from durable_teams.gateway.doors.langgraph.langgraph_requests import stream_modes, turn_text
from durable_teams.gateway.doors.langgraph.langgraph_tenancy import thread_in
from durable_teams.gateway.doors.langgraph.langgraph_threads import body_of, gateway_of
from durable_teams.gateway.doors.langgraph.langgraph_webhooks import check_webhook, cron_webhook
from durable_teams.gateway.doors.langgraph.langgraph_wire import NotFound, Unsupported
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.scheduled_turns import ScheduledTurn, ScheduledTurnWorkflow
from durable_teams.workflows.state import ConversationInput

PREFIX = "langgraph-cron-"
NAMED = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRONTAB = re.compile(r"(?:[0-9A-Za-z*/,?#-]+[ \t]+){4}[0-9A-Za-z*/,?#-]+|" + "|".join(NAMED))
"""What a LangGraph cron's schedule may be: a crontab line of five fields, at most once a
minute (Temporal would also take seconds and `@every 1s`: a thread a second)."""
ACCEPTED = {"schedule", "input", "assistant_id", "metadata", "enabled", "timezone", "end_time",
            "multitask_strategy", "on_run_completed", "stream_mode", "stream_subgraphs", "stream_resumable",
            "durability", "checkpoint_during", "webhook"}


def cron_spec(body: dict[str, Any]) -> ScheduleSpec:
    expression = body.get("schedule")
    if not isinstance(expression, str) or not expression.strip():
        raise checks.BadRequest("'schedule' is a cron expression ('*/5 * * * *')")
    if not CRONTAB.fullmatch(expression.strip()):
        raise Unsupported(f"schedule {expression[:80]!r}: a cron here is five fields (minute hour day month "
                          f"weekday) or one of {', '.join(NAMED)}, as LangGraph's; seconds, @every and "
                          "CRON_TZ are not served (the time zone is 'timezone')")
    if never_fires(expression.strip()):
        raise checks.BadRequest(f"schedule {expression[:80]!r} never fires: its days of the month fall in none "
                                "of its months", 422)
    end = body.get("end_time")
    try:
        end_at = datetime.fromisoformat(end) if isinstance(end, str) else None
    except ValueError:
        raise checks.BadRequest("'end_time' is an ISO 8601 time") from None
    return ScheduleSpec(cron_expressions=[expression], end_at=end_at, time_zone_name=optional_text(body, "timezone"))


def checked(body: dict[str, Any], thread: str | None) -> tuple[str, str]:
    """(team, text) of a cron request, or the error naming what is not served."""
    unknown = sorted(k for k in set(body) - ACCEPTED if body[k] is not None)
    if unknown:
        raise Unsupported(f"cron parameter(s) {', '.join(unknown)}")
    for name in ("stream_subgraphs", "stream_resumable"):
        if body.get(name) not in (None, False):
            raise Unsupported(f"{name}=true")
    if body.get("multitask_strategy") not in (None, "enqueue"):
        raise Unsupported(f"a cron's multitask_strategy={body['multitask_strategy']!r} (its turns queue: 'enqueue')")
    if body.get("on_run_completed") not in (None, "keep") or (thread and body.get("on_run_completed")):
        raise Unsupported(f"on_run_completed={body.get('on_run_completed')!r} (a cron's threads are kept)")
    team = body.get("assistant_id")
    if not isinstance(team, str) or not team:
        raise checks.BadRequest("'assistant_id' is required: the name of a team")
    optional_flag(body, "enabled")
    if body.get("stream_mode") is not None:
        stream_modes(body["stream_mode"])
    return team, turn_text(body.get("input"))


async def create(request: Request) -> Response:
    gw, body, scope = gateway_of(request), await body_of(request, empty_ok=False), scope_of(request)
    thread = request.path_params.get("thread")
    team, text = checked(body, thread)
    gw.check_team(team)
    cron_id = PREFIX + uuid.uuid4().hex
    memo: dict[str, Any] = {"team": team, "queue": gw.task_queue} | ({SCOPE_MEMO: scope} if scope else {})
    hook = cron_webhook(team, await check_webhook(body["webhook"]), scope) if body.get("webhook") is not None else None
    if thread is not None:
        thread = thread_in(request)
        try:
            known = await gw.running(thread, team, scope)  # another scope's: 404 too; ended: 409
        except TeamMismatch as err:
            raise checks.BadRequest(f"{err}: a thread's assistant is its team", 409) from None
        if not known:
            raise NotFound(f"no thread {thread}")  # by the caller's id in the answer (core/errors.py)
        memo["thread"] = thread
        action = ScheduleActionStartWorkflow(ScheduledTurnWorkflow.run, ScheduledTurn(thread=thread, text=text, webhook=hook),
                                             id=f"{cron_id}-turn", task_queue=gw.task_queue)
    else:
        thread_memo = {"team": team} | ({SCOPE_MEMO: scope} if scope else {})
        inp = ConversationInput(team_name=team, task=text, single_turn=True, history=[], answer_history=False)
        if hook is None:
            action = ScheduleActionStartWorkflow(TeamWorkflow.run, inp, id=workflow_id(scope, f"{cron_id}-run"),
                                                 task_queue=gw.task_queue,
                                                 memo=thread_memo, task_timeout=TASK_TIMEOUT)
        else:  # each firing starts the thread and then the webhook's watch of its run
            action = ScheduleActionStartWorkflow(ScheduledTurnWorkflow.run, ScheduledTurn(
                text=text, webhook=hook, start=inp, memo=thread_memo,
                task_timeout_seconds=TASK_TIMEOUT.total_seconds()), id=workflow_id(scope, f"{cron_id}-run"),
                task_queue=gw.task_queue)
    metadata = optional_object(body, "metadata")
    memo |= {"metadata": metadata, "input": body.get("input"), "created_at": datetime.now(UTC).isoformat(),
             "schedule": body["schedule"], "timezone": body.get("timezone")}  # the server keeps calendars
    state = ScheduleState(paused=body.get("enabled") is False, note="a LangGraph cron")
    spec = cron_spec(body)
    async with schedules_served():
        handle = await gw.client.create_schedule(cron_id, Schedule(action=action, spec=spec, state=state), memo=memo)
    try:
        described: ScheduleDescription | None = await handle.describe()
    except RPCError:  # made: it is answered (without its next run), so a client does not make another
        described = None
    if described is not None and not described.info.next_action_times:  # its end_time before its first firing
        await handle.delete()
        raise checks.BadRequest(f"schedule {body['schedule'][:80]!r} never fires before its end_time "
                                f"{body.get('end_time')!r}", 422)
    made = cron_object(cron_id, memo, described, scope)
    made["payload"]["webhook"] = hook.url if hook else None  # (kept in the schedule's action, not its memo)
    return JSONResponse(made)


@asynccontextmanager
async def schedules_served() -> AsyncIterator[None]:
    """Temporal's refusal of Schedules themselves (a namespace where the operator disabled them,
    a server without them) as a 501 naming the cause, not a 502 of the server's words alone."""
    try:
        yield
    except RPCError as err:
        if err.status not in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED):
            raise
        raise Unsupported(f"crons on this Temporal namespace: a cron is a Temporal Schedule, and the server "
                          f"refuses them ({err.message or err.status.name}); its operator can allow them "
                          "(frontend.enableSchedules)", endpoint=True) from None


def cron_object(cron_id: str, memo: dict[str, Any], described: ScheduleDescription | None,
                scope: str | None) -> dict[str, Any]:
    spec = described.schedule.spec if described else None
    upcoming = described.info.next_action_times if described else []
    thread = memo.get("thread")
    return {"cron_id": cron_id, "assistant_id": memo.get("team"),
            "thread_id": shown(scope, thread) if isinstance(thread, str) else None,
            "schedule": memo.get("schedule"), "timezone": memo.get("timezone"),
            "end_time": spec.end_at.isoformat() if spec and spec.end_at else None,
            "payload": {"input": memo.get("input"), "assistant_id": memo.get("team")},
            "metadata": memo.get("metadata") or {}, "created_at": memo.get("created_at"),
            "updated_at": memo.get("created_at"), "user_id": None, "on_run_completed": None,
            "enabled": not described.schedule.state.paused if described else True,
            "next_run_date": upcoming[0].isoformat() if upcoming else None}


async def search(request: Request) -> Response:
    gw, body, scope = gateway_of(request), await body_of(request), scope_of(request)
    unknown = sorted(k for k, v in body.items() if v and k not in ("assistant_id", "thread_id", "limit", "offset"))
    if unknown:
        raise Unsupported(f"cron search parameter(s) {', '.join(unknown)}")
    team, thread, (offset, limit) = optional_text(body, "assistant_id"), optional_text(body, "thread_id"), page(body)
    thread = thread and workflow_id(scope, thread)
    found = []
    async with schedules_served():
        async for listed in await gw.client.list_schedules():
            if not listed.id.startswith(PREFIX):
                continue
            memo = await listed.memo()
            if memo.get("queue") != gw.task_queue or not sees(scope, memo):
                continue
            if team not in (None, memo.get("team")) or thread not in (None, memo.get("thread")):
                continue
            found.append(cron_object(listed.id, dict(memo), None, scope))
    return JSONResponse(found[offset:offset + limit])


async def delete(request: Request) -> Response:
    gw, cron_id = gateway_of(request), request.path_params["cron"]
    handle = gw.client.get_schedule_handle(cron_id)
    async with schedules_served():
        try:
            described = await handle.describe() if cron_id.startswith(PREFIX) else None
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            described = None
        if described is None or not sees(scope_of(request), await described.memo()):
            raise NotFound(f"no cron {cron_id[:80]!r}")
        await handle.delete()
    return Response(status_code=204)
