"""Connecting to Temporal and building the worker: shared by worker.py, the CLI and tests."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from durable_teams import exit_guard
from durable_teams.activities.mcp import MCPActivities
from durable_teams.activities.model import ModelActivities, ModelBackend
from durable_teams.activities.resolve_team import TeamActivities
from durable_teams.activities.tools import ToolActivities, ToolRegistry
from durable_teams.activities.views import ViewReader
from durable_teams.builders import CompiledTeam
from durable_teams.codec import KeySetting, codec_for, with_codec
from durable_teams.reading import SCRIPTED_IDENTITY
from durable_teams.tolerant import tolerant_client
from durable_teams.workflows.conversation import TeamWorkflow

TASK_QUEUE = os.environ.get("TEMPORAL_TASK_QUEUE", "durable-teams")
NAMESPACE = os.environ.get("TEMPORAL_NAMESPACE", "default")


def default_address() -> str:
    """`$TEMPORAL_ADDRESS`, else the embedded server's (127.0.0.1, `$DURABLE_TEAMS_PORT` or 7233)."""
    from durable_teams.devserver import DEFAULT_HOST, configured_port

    return os.environ.get("TEMPORAL_ADDRESS") or f"{DEFAULT_HOST}:{configured_port()}"


async def connect(address: str | None = None, *, encryption: KeySetting = None,
                  tracing: bool | None = None) -> Client:
    """A client using pydantic on the wire (our message types are pydantic models). Payloads
    are encrypted when `encryption` (keys as in DURABLE_TEAMS_ENCRYPTION_KEY, or an
    `EncryptionCodec`) or the environment configures a key; see durable_teams/codec.py.
    `tracing=True` (default: $DURABLE_TEAMS_OTEL set to 1) adds OpenTelemetry tracing
    (durable_teams/tracing.py, the `otel` extra). A worker built on this client encodes with
    the same codec and traces the same way.

    Also makes the interpreter's exit wait for the SDK's native threads to leave Python, so a
    script ending with a plain `asyncio.run(...)` does not abort at exit (durable_teams/exit_guard.py).
    """
    exit_guard.install()
    if tracing is None:
        tracing = os.environ.get("DURABLE_TEAMS_OTEL", "").lower() in ("1", "true", "yes")
    interceptors = []
    if tracing:
        from durable_teams.tracing import tracing_interceptors

        interceptors = tracing_interceptors()
    return await Client.connect(
        address or default_address(),
        namespace=NAMESPACE,
        data_converter=with_codec(pydantic_data_converter, codec_for(encryption)),
        interceptors=interceptors,
    )


def merged_registry(teams: Sequence[CompiledTeam]) -> ToolRegistry:
    registry = ToolRegistry()
    for team in teams:
        registry.merge(team.tools)
    return registry


def build_worker(
    client: Client,
    teams: Sequence[CompiledTeam],
    backend: ModelBackend,
    *,
    task_queue: str = TASK_QUEUE,
    view_reader: ViewReader | None = None,
    **worker_options: object,
) -> Worker:
    """One worker serving the conversation workflow, the model call and every team's tools.
    `view_reader` replaces how a model call reads its view (default: `ViewCache`)."""
    models = ModelActivities(backend, view_reader)
    registry = merged_registry(teams)
    tools = ToolActivities(registry)
    mcp = MCPActivities(registry.mcp_servers)
    resolver = TeamActivities({t.spec.name: t.spec for t in teams})
    options: dict = {
        "workflows": [TeamWorkflow],  # a test may serve another version of it (tests/next_release.py)
        "max_concurrent_activities": 200,
        # Our workflow package is imported once instead of into every conversation's sandbox.
        # Its one piece of module-level state is live_view's weak map of the conversations this
        # process holds, which workflows only write and only the model activity reads (to read a
        # cached conversation's view directly); no workflow reads anything another one wrote.
        # What the sandbox would catch at run time in that code (the wall clock, random, I/O) a
        # test checks in the source.
        "workflow_runner": SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("durable_teams.workflows")),
    }
    if getattr(backend, "scripted", False):  # clients read it from the task queue's pollers
        options["identity"] = f"{os.getpid()}@{socket.gethostname()} {SCRIPTED_IDENTITY}"
    options.update(worker_options)
    return Worker(
        tolerant_client(client),  # a payload it cannot decode is refused, not retried forever
        task_queue=task_queue,
        activities=[models.call_model, tools.run_tool, tools.run_local_tool, resolver.resolve_team,
                    mcp.list_mcp_tools, mcp.call_mcp_tool],
        **options,
    )


async def ensure_search_attributes(client: Client) -> None:
    """Register `AwaitingHuman` on a cluster that lacks it (the embedded server has it)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import (
        AddSearchAttributesRequest,
        ListSearchAttributesRequest,
    )

    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace))
        if "AwaitingHuman" in listed.custom_attributes:
            return
        await client.operator_service.add_search_attributes(AddSearchAttributesRequest(
            namespace=client.namespace,
            search_attributes={"AwaitingHuman": IndexedValueType.INDEXED_VALUE_TYPE_BOOL}))
    except Exception as err:  # noqa: BLE001 - a cluster may not allow it; say so, go on
        print(f"warning: could not register the AwaitingHuman search attribute: {err}")
