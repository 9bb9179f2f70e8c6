"""The activities of an A2A task's push notifications (durable_teams/workflows/a2a_push.py):
watching the task through its thread's `status` query, and sending a config one status
change. A delivery goes only to a public address (not loopback, private, link-local, shared,
reserved or multicast: checked against what the name resolves to at each attempt) unless the
operator allowed others; it never follows a redirect. No secret is logged or put in an error."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from durable_teams.activities.a2a_push_log import follow
from durable_teams.workflows.a2a_push import Delivery, TaskChange, WatchRequest
from durable_teams.workflows.a2a_tasks import TaskState, a2a_state
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.push_targets import cursor_of, public_refusal, signature
from durable_teams.workflows.turn_states import ended_state, turn_state

NOTIFIED = {"INPUT_REQUIRED", "AUTH_REQUIRED", "COMPLETED", "FAILED", "CANCELED", "REJECTED"}
"""The states a notification tells of (working and submitted are not worth one)."""


def status_event(task_id: str, thread: str, found: TaskState) -> dict[str, object]:
    """A2A's `StreamResponse` with the task's status update, as JSON (what a stream sends)."""
    status: dict[str, object] = {"state": f"TASK_STATE_{found.state}",
                                 "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z")}
    if found.text:
        status["message"] = {"messageId": f"{task_id}-{signature(found).partition(':')[2]}", "contextId": thread,
                             "taskId": task_id, "role": "ROLE_AGENT", "parts": [{"text": found.text}]}
    return {"statusUpdate": {"taskId": task_id, "contextId": thread, "status": status}}


def named_for(event: dict[str, object], context: str | None) -> dict[str, object]:
    """The event as the config's caller reads the task through the door: its context, task id
    and message id by the caller's own id for the thread (`context`; None: the workflow id,
    unchanged). Only ids the gateway derived from the thread's (`<thread>::<turn>...`) change."""
    update = event.get("statusUpdate")
    if context is None or not isinstance(update, dict) or not isinstance(update.get("contextId"), str):
        return event
    workflow: str = update["contextId"]

    def renamed(value: object) -> object:
        return context + value[len(workflow):] if isinstance(value, str) and value.startswith(f"{workflow}::") else value
    status = dict(update.get("status") or {})
    if isinstance(status.get("message"), dict):
        message = dict(status["message"])
        status["message"] = message | {"contextId": context, "taskId": renamed(message.get("taskId")),
                                       "messageId": renamed(message.get("messageId"))}
    return {**event, "statusUpdate": {**update, "contextId": context, "taskId": renamed(update.get("taskId")),
                                      "status": status}}


async def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, as `public_refusal` checks them (workflows/push_targets.py)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class PushRefused(ApplicationError):
    """A delivery that no retry would help (its address, or the receiver's refusal)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type="PushRefused", non_retryable=True)


@activity.defn(name="watch_a2a_task")
async def watch_a2a_task(req: WatchRequest) -> TaskChange:
    """Wait (heartbeating) until the task reaches a notified state other than `req.last`; an
    empty change after `watch_seconds` (the workflow looks again)."""
    task_id = f"{req.thread}::{req.turn}"
    if cursor_of(req.last) is not None:  # where the last state was in the conversation's history
        told = await follow(req, task_state)
        if told is None:
            return TaskChange()
        cursor, found = told
        return TaskChange(signature=cursor, state=found.state, event=status_event(task_id, req.thread, found))
    deadline = time.monotonic() + req.watch_seconds
    while True:
        found = await task_state(req.thread, req.turn)
        if found.state in NOTIFIED and signature(found) != req.last:
            return TaskChange(signature=signature(found), state=found.state,
                              event=status_event(task_id, req.thread, found))
        if time.monotonic() >= deadline:
            return TaskChange()
        activity.heartbeat()
        await asyncio.sleep(req.poll_seconds)


async def task_state(thread: str, turn: int) -> TaskState:
    """Turn `turn` of `thread` now, as the gateway reads it (durable_teams/gateway/doors/a2a/reading.py)."""
    handle = activity.client().get_workflow_handle(thread)
    described = await handle.describe()
    running = described.status == WorkflowExecutionStatus.RUNNING
    cancelled = described.status in (WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED)
    try:
        status = await handle.query(TeamWorkflow.status)
    except Exception:  # noqa: BLE001 - an ended thread no worker can read: its end is the state
        if running:
            raise
        return TaskState("CANCELED" if cancelled else "FAILED", "the conversation has ended")
    reply = status.last_reply
    if reply is not None and reply.turn > turn:
        replies = await handle.query(TeamWorkflow.turn_replies, [turn])
        reply = replies[0] if replies else None
    return a2a_state(ended_state(turn_state(status, turn, reply, running), running, cancelled))


@activity.defn(name="deliver_a2a_push")
async def deliver_a2a_push(req: Delivery) -> None:
    """POST the event to the config's URL with its token and authentication; a 2xx is done,
    another 4xx (but 408 and 429) is the receiver's refusal (not retried), the rest is retried."""
    config = req.config
    refused = await public_refusal(config.url, req.allow_private, resolve)
    if refused:
        raise PushRefused(f"push config {config.id!r}: {refused}")
    event = named_for(req.event, config.context)
    headers = {"Content-Type": "application/json"}
    if config.token:
        headers["X-A2A-Notification-Token"] = config.token
    if config.scheme and config.credentials:
        headers["Authorization"] = f"{config.scheme} {config.credentials}"
    try:
        async with httpx.AsyncClient(timeout=20, follow_redirects=False) as http:
            response = await http.post(config.url, json=event, headers=headers)
    except httpx.HTTPError as err:  # its type only: a message may carry the request
        raise ApplicationError(f"push config {config.id!r}: {type(err).__name__}", type="PushUnreachable") from None
    if 200 <= response.status_code < 300:
        return
    what = f"push config {config.id!r}: the receiver answered {response.status_code}"
    if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
        raise PushRefused(what)
    raise ApplicationError(what, type="PushFailed")


ACTIVITIES: list[Callable[..., Any]] = [watch_a2a_task, deliver_a2a_push]
