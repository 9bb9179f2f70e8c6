"""A2A push notification configs of a task, kept by the task's push workflow
(durable_teams/workflows/a2a_push.py: its id `a2a-push:<task id>`), never in the gateway: set
(update-with-start), read (its query), deleted (its update). A URL is checked when it is set
(a public http(s) address unless the operator allows others: `ALLOW_PRIVATE_ENV`) and again
at each delivery. The token and credentials go to the workflow's payloads only."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from temporalio.client import (
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.core.turn_tasks import task_id
from durable_teams.gateway.doors.a2a.push_start import first_cursor
from durable_teams.gateway.doors.a2a.wire import state_of
from durable_teams.workflows.a2a_push import A2APushWorkflow, PushConfig, PushInput
from durable_teams.workflows.push_targets import public_refusal, signature

ALLOW_PRIVATE_ENV = "DURABLE_TEAMS_A2A_PUSH_ALLOW_PRIVATE"
"""`1` (or `true`, `yes`): deliver to loopback, private and link-local addresses too (a
receiver on the operator's own network); read when the gateway starts."""
RETRY_ENV = "DURABLE_TEAMS_A2A_PUSH_RETRY_SECONDS"
"""The first delivery retry's backoff, seconds (doubling up to 5 minutes)."""
ATTEMPTS_ENV = "DURABLE_TEAMS_A2A_PUSH_ATTEMPTS"
"""Delivery attempts of one notification before it is given up."""
POLL_SECONDS_ENV = "DURABLE_TEAMS_A2A_PUSH_POLL_SECONDS"
"""How often the watching activity heartbeats, seconds (and how often a push workflow of an
earlier release reads its task's state: the watch follows the conversation's history)."""
MAX_FIELD = 2048


def allow_private_from_env() -> bool:
    return os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class PushOptions:
    """The operator's choices for push deliveries, fixed in a task's push workflow when its
    first config is set (a later gateway's options apply to later tasks)."""

    allow_private: bool = False
    retry_seconds: float = 1.0
    attempts: int = 8
    poll_seconds: float = 1.0

    def __post_init__(self) -> None:
        for name, value, low, high in (("retry_seconds", self.retry_seconds, 0.001, 3600.0),
                                       ("attempts", self.attempts, 1, 100),
                                       ("poll_seconds", self.poll_seconds, 0.01, 60.0)):
            if not low <= value <= high:
                raise ValueError(f"A2A push {name} must be within {low}..{high}, not {value!r}")

    @classmethod
    def from_env(cls) -> PushOptions:
        """The options in the gateway's environment (`ValueError` naming a bad one)."""
        values: dict[str, Any] = {"allow_private": allow_private_from_env()}
        for env, name, kind in ((RETRY_ENV, "retry_seconds", float), (ATTEMPTS_ENV, "attempts", int),
                                (POLL_SECONDS_ENV, "poll_seconds", float)):
            text = os.environ.get(env, "").strip()
            if text:
                try:
                    values[name] = kind(text)
                except ValueError:
                    raise ValueError(f"{env}={text[:40]!r} is not a{'n integer' if kind is int else ' number'}") from None
        try:
            return cls(**values)
        except ValueError as err:
            raise ValueError(f"{err} (from the environment: {RETRY_ENV}, {ATTEMPTS_ENV}, {POLL_SECONDS_ENV})") from None


async def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, as `public_refusal` checks them (workflows/push_targets.py)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def push_id(task_id: str) -> str:
    return f"a2a-push:{task_id}"


def as_config(task_id: str, config: PushConfig) -> pb.TaskPushNotificationConfig:
    out = pb.TaskPushNotificationConfig(id=config.id, task_id=task_id, url=config.url, token=config.token)
    if config.scheme:
        out.authentication.scheme = config.scheme
        out.authentication.credentials = config.credentials
    return out


@dataclass
class PushConfigs:
    """The push configs of one gateway's tasks (`options`: the operator's choices)."""

    gateway: Gateway
    options: PushOptions = field(default_factory=PushOptions)

    async def check(self, params: pb.TaskPushNotificationConfig) -> None:
        """`InvalidParamsError` for a config that cannot be kept: a field too long, a URL that
        is not a public http(s) one (unless the operator allows others)."""
        for name, value in (("url", params.url), ("token", params.token), ("id", params.id),
                            ("authentication.credentials", params.authentication.credentials)):
            if len(value) > MAX_FIELD:
                raise InvalidParamsError(f"push notification config {name} over {MAX_FIELD} characters")
        refused = await public_refusal(params.url, self.options.allow_private, resolve)
        if refused:
            raise InvalidParamsError(f"push notification url refused: {refused}")

    async def set(self, thread: str, turn: int, task: pb.Task, params: pb.TaskPushNotificationConfig,
                  fresh: bool = False) -> pb.TaskPushNotificationConfig:
        """Keep `params` for turn `turn` of the workflow `thread`, `task` as its caller reads it
        now (`fresh`: the task's message carried the config, so every state of the task is
        told; else the state it is in now, if worth telling, and those after it: push_start.py).
        Its deliveries name the task and context as `task` does."""
        await self.check(params)
        now = state_of(task)
        last = await first_cursor(self.gateway.client, thread, now, fresh)
        config = PushConfig(id=params.id or uuid.uuid4().hex, url=params.url, token=params.token,
                            scheme=params.authentication.scheme, credentials=params.authentication.credentials,
                            context=task.context_id if task.context_id != thread else None,
                            state_seen=signature(now))
        start = WithStartWorkflowOperation(
            A2APushWorkflow.run, PushInput(thread=thread, turn=turn, last=last,
                                           allow_private=self.options.allow_private,
                                           retry_seconds=self.options.retry_seconds,
                                           attempts=self.options.attempts,
                                           poll_seconds=self.options.poll_seconds),
            id=push_id(task_id(thread, turn)), task_queue=self.gateway.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        try:
            await self.gateway.client.execute_update_with_start_workflow(A2APushWorkflow.set_config, config,
                                                                         start_workflow_operation=start)
        except WorkflowUpdateFailedError as err:
            raise InvalidParamsError(str(getattr(err.cause, "message", err))) from None
        return as_config(task.id, config)

    async def listed(self, task: str, named: str) -> list[pb.TaskPushNotificationConfig]:
        """The configs of the task (`task`: its workflow-form id; `named`: as its caller names
        it), none once its push workflow has ended."""
        handle = self.gateway.client.get_workflow_handle(push_id(task))
        try:
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                return []
            configs = await handle.query(A2APushWorkflow.listed)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return []
            raise
        return [as_config(named, c) for c in configs]

    async def get(self, task: str, named: str, config_id: str) -> pb.TaskPushNotificationConfig:
        for config in await self.listed(task, named):
            if config.id == config_id:
                return config
        raise TaskNotFoundError(f"no push notification config {config_id[:80]!r} for task {named[:120]}")

    async def delete(self, task: str, named: str, config_id: str) -> None:
        await self.get(task, named, config_id)  # a missing one is an error, as for get
        handle = self.gateway.client.get_workflow_handle(push_id(task))
        try:
            await handle.execute_update(A2APushWorkflow.delete_config, config_id)
        except (WorkflowUpdateFailedError, RPCError):  # ended meanwhile: nothing is delivered any more
            pass
