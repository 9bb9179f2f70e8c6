"""Building a worker: the conversation workflow, the model call and every team's tools on two
task queues (connecting is the client's: durable_teams/client/connection.py)."""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import uuid
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.worker import (
    FixedSizeSlotSupplier,
    ResourceBasedSlotConfig,
    ResourceBasedSlotSupplier,
    ResourceBasedTunerConfig,
    Worker,
    WorkerTuner,
)
from temporalio.worker.workflow_sandbox import SandboxRestrictions

from durable_teams.activities import a2a_push_delivery, cron_firings, heartbeats
from durable_teams.activities.mcp_calls import MCPActivities
from durable_teams.activities.model import ModelActivities, ModelBackend
from durable_teams.activities.model_embeddings import EmbeddingActivities
from durable_teams.activities.resolve_team import TeamActivities
from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.activities.view_cache import ViewReader
from durable_teams.client import exit_guard
from durable_teams.client.connection import TASK_QUEUE, require_namespace
from durable_teams.live.from_env import hub_from_env
from durable_teams.live.hub import LiveHub
from durable_teams.memory.store import Store
from durable_teams.memory.store_config import LazyStore
from durable_teams.teams.builders import CompiledTeam
from durable_teams.teams.team_tools import ToolsByTeam
from durable_teams.teams.tools import ToolRegistry
from durable_teams.worker.log_announcer import LogAnnouncer
from durable_teams.worker.sandbox_runner import (
    AnnouncingSandboxRunner,
    ContextFreeSandboxRunner,
    needs_context,
)
from durable_teams.worker.search_attributes import LabelsActivity, learn_labels, say_once
from durable_teams.worker.team_sets import (
    mixed_queue_line,
    mixed_queue_note,
    worker_identity,
    workers_serving_other_teams,
)
from durable_teams.worker.tolerant_converter import tolerant_client
from durable_teams.workflows.a2a_push import A2APushWorkflow
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.placement import LOCATE_ACTIVITY
from durable_teams.workflows.run_webhooks import RunWebhookWorkflow
from durable_teams.workflows.scheduled_turns import ScheduledTurnWorkflow


def merged_mcp_servers(teams: Sequence[CompiledTeam]) -> dict[str, Any]:
    """Every team's MCP server definitions by name (one name, one server, across the teams)."""
    registry = ToolRegistry()
    for team in teams:
        registry.add_mcp(*team.tools.mcp_servers.values())
    return registry.mcp_servers


class TeamWorker:
    """A worker process's two Temporal workers: one on the shared task queue (conversations,
    tools, model calls), one on a queue of its own (`worker_queue`) that takes the model calls
    of the conversations this process holds (workflows/placement.py).

    Use it as `async with` (both poll in the background) or `await run()`."""

    def __init__(self, shared: Worker, own: Worker, worker_queue: str,
                 models: ModelActivities | None = None, labels: LabelsActivity | None = None,
                 mcp: MCPActivities | None = None, team_names: Sequence[str] = (),
                 memory: LazyStore | None = None) -> None:
        self.shared = shared
        self.own = own
        self.worker_queue = worker_queue
        self.models = models
        """The model activity (its view cache), for statistics."""
        self.labels = labels
        """Which search attributes conversations may set: learned (and registered) at start."""
        self.mcp = mcp
        """The MCP activities: their persistent sessions close when the workers have stopped."""
        self.team_names = tuple(team_names)
        """The teams this worker serves (their digest is in its identity: worker/team_sets.py)."""
        self.memory = memory
        """The memory store the tools use: closed when the workers have stopped, if it opened it."""

    async def _before_start(self) -> None:
        await require_namespace(self.shared.client)
        if self.labels is not None:
            await self.labels.learn()
        await self._say_if_queue_is_mixed()

    async def _say_if_queue_is_mixed(self) -> None:
        """Warn when workers already on the task queue serve other teams (team_sets.py)."""
        try:
            others = await workers_serving_other_teams(self.shared.client, self.task_queue, self.team_names)
        except RPCError:  # a role that may not describe task queues: nothing to say
            return
        if others:
            say_once(mixed_queue_line(self.task_queue, others))

    @property
    def task_queue(self) -> str:
        return self.shared.task_queue

    async def _close_sessions(self) -> None:
        try:
            if self.mcp is not None:
                await self.mcp.close()
        finally:
            if self.memory is not None:
                await self.memory.close()

    async def run(self) -> None:
        await self._before_start()
        try:
            async with self.own:
                await self.shared.run()
        finally:  # no activity runs any more: each MCP server's session may close
            await self._close_sessions()

    async def shutdown(self) -> None:
        """Stop both gracefully (safe to call more than once, or before they started)."""
        await asyncio.gather(self.shared.shutdown(), self.own.shutdown())

    async def __aenter__(self) -> TeamWorker:
        await self._before_start()
        await self.own.__aenter__()
        try:
            await self.shared.__aenter__()
        except BaseException:
            await self.own.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await self.shared.__aexit__(kind, exc, tb)
        finally:
            try:
                await self.own.__aexit__(kind, exc, tb)
            finally:
                await self._close_sessions()
            # Two workers finish two sets of native callbacks: let them leave Python before
            # the caller goes on (exit_guard: an interpreter exit must not race them).
            await asyncio.to_thread(exit_guard.wait_for_native_threads, 0.5)


def worker_queue_name(task_queue: str) -> str:
    """A task queue only this worker polls: host, process and a random part."""
    return f"{task_queue}/{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def locate_activity(queue: str):  # noqa: ANN201 - an activity callable
    @activity.defn(name=LOCATE_ACTIVITY)
    async def worker_task_queue() -> str:
        """This worker's own task queue (run as a local activity: where the workflow runs)."""
        return queue

    return worker_task_queue


MAX_ACTIVITIES = 1000
"""Activity slots: model calls and tools mostly wait on the network; the CPU, not this, is the limit."""


def cpu_tuner(target_cpu: float) -> WorkerTuner:
    """Slots for workflow tasks and local calls handed out while the machine's CPU stays under
    `target_cpu` (0-1, e.g. 0.8), up to 2,000 each; activity slots fixed at MAX_ACTIVITIES.
    For local model calls, whose conversation holds a workflow-task slot for the whole call,
    this admits as many conversations as the CPU serves, whatever the model's latency
    (docs/deployment.md)."""
    by_cpu = ResourceBasedTunerConfig(target_memory_usage=0.8, target_cpu_usage=target_cpu)
    return WorkerTuner.create_composite(
        workflow_supplier=ResourceBasedSlotSupplier(ResourceBasedSlotConfig(maximum_slots=2000), by_cpu),
        activity_supplier=FixedSizeSlotSupplier(MAX_ACTIVITIES),
        # Local calls get the workflow tasks' minimum of 5 (the SDK's default for activities is
        # 1): a model call waits on the network, so a busy CPU must not serialise them.
        local_activity_supplier=ResourceBasedSlotSupplier(
            ResourceBasedSlotConfig(minimum_slots=5, maximum_slots=2000, ramp_throttle=timedelta(0)),
            by_cpu),
        nexus_supplier=FixedSizeSlotSupplier(100))


ACTIVITY_OPTIONS = ("max_concurrent_activities", "activity_executor", "identity",
                    "default_heartbeat_throttle_interval",
                    "graceful_shutdown_timeout", "max_activities_per_second")
"""`build_worker` options that also apply to the worker on its own queue."""


def shared_options(client: Client, names: list[str], backend: ModelBackend,
                   worker_options: dict[str, object], hub: LiveHub | None = None) -> dict:
    """The options of the worker on the shared task queue: the workflows it runs, their sandbox
    (announcing the conversations' new log messages on `hub`, if given), its identity and its
    activity slots, with the caller's `worker_options` over them."""
    options: dict = {
        # a test may serve another version of TeamWorkflow (tests/next_release.py); A2A tasks'
        # push notifications are workflows of their own (workflows/a2a_push.py), and so are the
        # turns a thread's cron sends (workflows/scheduled_turns.py) and a run's webhook
        # (workflows/run_webhooks.py)
        "workflows": [TeamWorkflow, A2APushWorkflow, ScheduledTurnWorkflow, RunWebhookWorkflow],
        # a regular model call heartbeats to hear of a cancel (activities/heartbeats.py)
        "default_heartbeat_throttle_interval": heartbeats.THROTTLE,
        # Our workflow package is imported once instead of into every conversation's sandbox.
        # Its one piece of module-level state is offered_views's weak map of the conversations this
        # process holds, which workflows only write and only the model activity reads (to read a
        # cached conversation's view directly), and log_outbox's appends of the activation under
        # way, which the runner takes to announce them (worker/log_announcer.py); no workflow
        # reads anything another one wrote.
        # What the sandbox would catch at run time in that code (the wall clock, random, I/O) a
        # test checks in the source.
        # Context-free (durable_teams/worker/sandbox_runner.py) unless a codec or external storage
        # needs serialization contexts: naming one costs an exec into the sandbox per payload.
        "workflow_runner": (AnnouncingSandboxRunner if needs_context(client.data_converter)
                            else ContextFreeSandboxRunner)(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("durable_teams.workflows"),
            announcer=LogAnnouncer(hub) if hub is not None else None),
    }
    # clients read the scripted mark from the task queue's pollers, workers the team set
    options["identity"] = worker_identity(names, scripted=getattr(backend, "scripted", False))
    if "tuner" not in worker_options:  # the SDK takes slot counts or a tuner, not both
        options["max_concurrent_activities"] = MAX_ACTIVITIES
    options.update(worker_options)
    return options


def build_worker(
    client: Client,
    teams: Sequence[CompiledTeam],
    backend: ModelBackend,
    *,
    task_queue: str = TASK_QUEUE,
    view_reader: ViewReader | None = None,
    live_hub: LiveHub | None = None,
    memory: Store | None = None,
    tool_activities: ToolActivities | None = None,
    **worker_options: object,
) -> TeamWorker:
    """A worker serving the conversation workflow, the model call and every team's tools, on
    `task_queue` and on a queue of its own. `view_reader` replaces how a model call reads its
    view (default: `ViewCache`); `live_hub` is where streamed text deltas go (default: the one
    DURABLE_TEAMS_LIVE_URL names, else this process's); `memory` is the store tools are given
    (default: the one DURABLE_TEAMS_MEMORY names, opened when a tool first needs it,
    durable_teams/memory/store_config.py); `tool_activities` runs the tool calls instead of the
    teams' own (a replay serves recorded results: durable_teams/replay/replay_tools.py); other
    options go to `temporalio.worker.Worker`."""
    hub = live_hub or hub_from_env(client.data_converter.payload_codec)
    models = ModelActivities(backend, view_reader, hub)
    embeddings = EmbeddingActivities(backend)
    names = [t.spec.name for t in teams]
    note = functools.partial(mixed_queue_note, names)
    # two teams may each have an `add`
    tools = tool_activities or ToolActivities(ToolsByTeam.of(teams), note, memory)
    mcp = MCPActivities(merged_mcp_servers(teams))
    resolver = TeamActivities({t.spec.name: t.spec for t in teams}, note)
    labels = LabelsActivity(client)
    own_queue = worker_queue_name(task_queue)
    options = shared_options(client, names, backend, worker_options, hub)
    worker_client = tolerant_client(client)  # a payload it cannot decode is refused, not retried forever
    shared = Worker(
        worker_client,
        task_queue=task_queue,
        activities=[models.call_model, tools.run_tool, tools.run_local_tool, resolver.resolve_team,
                    mcp.list_mcp_tools, mcp.call_mcp_tool, locate_activity(own_queue),
                    labels.available_labels, embeddings.embed_texts, *a2a_push_delivery.ACTIVITIES,
                    *cron_firings.ACTIVITIES],
        **options,
    )
    own = Worker(worker_client, task_queue=own_queue, activities=[models.call_model],
                 **{"max_concurrent_activities": MAX_ACTIVITIES,
                    **{k: v for k, v in options.items() if k in ACTIVITY_OPTIONS}})
    return TeamWorker(shared, own, own_queue, models, labels, mcp, names, tools.store)


async def ensure_search_attributes(client: Client) -> frozenset[str]:
    """Register our search attributes (`AwaitingHuman`, `Team`, `Task`) where the namespace lacks
    them and may take them; one warning line names what is still missing (and the command that
    adds it). Returns the ones usable. A worker does this itself when it starts."""
    have, line = await learn_labels(client)
    say_once(line)
    return have
