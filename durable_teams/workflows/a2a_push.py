"""Push notifications of one A2A task (a turn of a thread): a workflow per task, so the configs
and their deliveries live in Temporal, never in a gateway's memory, and survive any restart.

The gateway starts it with the first config (update-with-start) and sets, reads and deletes
configs through its updates and query (durable_teams/gateway/doors/a2a/push_configs.py). It watches
the task through an activity (`watch_a2a_task`: returns once the task reaches a state worth a
notification that differs from the last one) and sends each config the new status through
another (`deliver_a2a_push`, retried with backoff). It ends `LINGER` after the task ends (so
configs stay readable for a while), or once no config is left.

A config's token and credentials travel in this workflow's payloads (encrypted when the
deployment encrypts payloads, docs/deployment.md), never in its id, memo, search attributes,
activity summaries or logs."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pydantic import Field
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from .wire_base import Wire, left_out_when_unset

MAX_CONFIGS = 10
"""Configs one task keeps (more are refused: each is a delivery per change)."""
LINGER = timedelta(hours=1)
"""How long configs stay readable after the task ended, or with none set yet."""


class PushConfig(Wire):
    """Where and how to tell of the task's changes (A2A's `TaskPushNotificationConfig`)."""

    id: str
    url: str
    token: str = ""
    """Sent back as `X-A2A-Notification-Token` (the receiver checks it is the one it gave)."""
    scheme: str = ""
    credentials: str = ""
    """`Authorization: <scheme> <credentials>` on each delivery, when both are set."""
    context: str | None = left_out_when_unset()
    """The task's context (its thread) as the caller who set the config names it, when that is
    not the workflow id (a tenant's own id, durable_teams/gateway/core/tenant_ids.py): its
    deliveries name the context and task so (left out of the wire when unset: configs set by
    an earlier release, or by an operator, read as before)."""
    state_seen: str | None = left_out_when_unset()
    """The task's state as the gateway read it when it set this config (`STATE:digest`): a
    config added to a workflow that has told that state already is told it too (not kept)."""

    def __repr__(self) -> str:  # never the secrets in a log or a traceback
        return f"PushConfig(id={self.id!r}, url={self.url!r})"

    __str__ = __repr__


class PushInput(Wire):
    """The task watched and its configs (`last`: the signature of the state already told,
    `STATE:digest`, "" for none yet)."""

    thread: str
    turn: int
    configs: list[PushConfig] = Field(default_factory=list)
    last: str = ""
    allow_private: bool = False
    """Deliver to loopback, private and link-local addresses too (the operator's choice)."""
    poll_seconds: float = 1.0
    watch_seconds: float = 300.0
    attempts: int = 8
    retry_seconds: float = 1.0


class WatchRequest(Wire):
    thread: str
    turn: int
    last: str
    poll_seconds: float
    watch_seconds: float


class TaskChange(Wire):
    """What `watch_a2a_task` saw: `signature` "" when nothing changed within its time; else the
    state (A2A's name without the prefix), the status text and the event to send."""

    signature: str = ""
    state: str = ""
    event: dict[str, object] = Field(default_factory=dict)


class Delivery(Wire):
    config: PushConfig
    event: dict[str, object]
    allow_private: bool


FINAL = {"COMPLETED", "FAILED", "CANCELED", "REJECTED"}
TELL_A_LATE_CONFIG = "a2a-push-tell-a-late-config-the-state-told"
"""The patch under which a config added after a state was told is told that state."""


@workflow.defn
class A2APushWorkflow:
    @workflow.init
    def __init__(self, inp: PushInput) -> None:
        self.configs: dict[str, PushConfig] = {c.id: c for c in inp.configs}
        self.failures: dict[str, str] = {}
        """The latest delivery that failed for good, by config id (the reason, no secret)."""
        self.inp = inp
        self.told: TaskChange | None = None
        """The change told last (in this run)."""
        self.telling: set[asyncio.Future[None]] = set()
        """Deliveries of the change told last to configs set after it (held till done)."""

    @workflow.run
    async def run(self, inp: PushInput) -> None:
        last, ended = inp.last, inp.last.partition(":")[0] in FINAL
        while self.configs and not ended:
            change = await self._watch(inp, last)
            if change is None:  # every config deleted meanwhile
                break
            if not change.signature:  # nothing new in watch_seconds: look again
                if workflow.info().is_continue_as_new_suggested():
                    workflow.continue_as_new(inp.model_copy(update={"configs": list(self.configs.values()),
                                                                    "last": last}))
                continue
            last, ended, self.told = change.signature, change.state in FINAL, change
            await asyncio.gather(*(self._deliver(inp, c, change) for c in list(self.configs.values())))
        await workflow.wait_condition(lambda: not self.configs, timeout=LINGER)

    async def _watch(self, inp: PushInput, last: str) -> TaskChange | None:
        watching = workflow.start_activity(
            "watch_a2a_task", WatchRequest(thread=inp.thread, turn=inp.turn, last=last,
                                           poll_seconds=inp.poll_seconds, watch_seconds=inp.watch_seconds),
            result_type=TaskChange, start_to_close_timeout=timedelta(seconds=inp.watch_seconds + 60),
            heartbeat_timeout=timedelta(seconds=max(30.0, inp.poll_seconds * 10)),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1)),
            summary="watch the A2A task")
        emptied = asyncio.ensure_future(workflow.wait_condition(lambda: not self.configs))
        await workflow.wait([watching, emptied], return_when=asyncio.FIRST_COMPLETED)  # deterministic, unlike asyncio.wait
        if watching.done():
            emptied.cancel()
            return watching.result()
        watching.cancel()
        return None

    async def _deliver(self, inp: PushInput, config: PushConfig, change: TaskChange) -> None:
        try:
            await workflow.execute_activity(
                "deliver_a2a_push", Delivery(config=config, event=change.event, allow_private=inp.allow_private),
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=inp.retry_seconds), backoff_coefficient=2.0,
                                         maximum_interval=timedelta(minutes=5), maximum_attempts=inp.attempts,
                                         non_retryable_error_types=["PushRefused"]),
                summary="deliver an A2A push notification")
            self.failures.pop(config.id, None)
        except ActivityError as err:  # given up: the next change is tried again
            cause = err.cause
            self.failures[config.id] = str(getattr(cause, "message", None) or cause or err)[:300]

    @workflow.update
    def set_config(self, config: PushConfig) -> None:
        """Keep `config`; a new one, set while the task is in the state told last, is told it
        (the states after it follow with the others')."""
        late = config.id not in self.configs and self.told is not None and config.state_seen is not None \
            and self.told.signature.partition("@")[0] == config.state_seen
        self.configs[config.id] = config.model_copy(update={"state_seen": None})
        if late and self.told is not None and workflow.patched(TELL_A_LATE_CONFIG):
            telling = asyncio.ensure_future(self._deliver(self.inp, self.configs[config.id], self.told))
            self.telling.add(telling)
            telling.add_done_callback(self.telling.discard)

    @set_config.validator
    def _may_set(self, config: PushConfig) -> None:
        if config.id not in self.configs and len(self.configs) >= MAX_CONFIGS:
            raise ValueError(f"a task keeps at most {MAX_CONFIGS} push notification configs")

    @workflow.update
    def delete_config(self, config_id: str) -> bool:
        return self.configs.pop(config_id, None) is not None

    @workflow.query
    def listed(self) -> list[PushConfig]:
        return list(self.configs.values())

    @workflow.query
    def failed(self) -> dict[str, str]:
        return dict(self.failures)
