"""Processes the scale-out benchmark runs: worker processes and the scripted HTTP model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.worker.temporal_cli import find_temporal_binary
from durable_teams.workflows import labels
from durable_teams.workflows.human import AWAITING_HUMAN

ROOT = Path(__file__).resolve().parent.parent


DEV_SERVER_LOG = Path(tempfile.gettempdir()) / "durable-teams-bench-devserver.log"
"""Where the benchmark's dev server writes its banner and log lines (never into the tables)."""


async def dev_server(log: Path = DEV_SERVER_LOG, extra_args: Sequence[str] = ()) -> WorkflowEnvironment:
    """The embedded Temporal dev server a benchmark runs on, with our search attributes; its
    output goes to `log` (its path is said on stderr), so a benchmark prints only its tables.
    `extra_args`: more of `temporal server start-dev`'s options (`--metrics-port 9090`, say)."""
    with output_to(log):  # the server process inherits the descriptors when it is spawned
        env = await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=find_temporal_binary(),
            search_attributes=[AWAITING_HUMAN, labels.TEAM, labels.TASK], dev_server_extra_args=list(extra_args))
    print(f"(Temporal dev server log: {log})", file=sys.stderr)
    return env


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr descriptors point at `log` while the block runs (a
    child started meanwhile keeps writing there), then back."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


class Proc:
    """A child process that prints one line when ready; CPU and RSS read with psutil."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.args = [sys.executable, *args]
        self.env = {**os.environ, **(env or {})}
        self.first_line = ""
        self.lines: list[str] = []
        """The last lines it printed after the first (read as they come: see `drain`)."""
        self.identity = ""
        """A worker process's Temporal identity, as histories name it."""

    async def start(self) -> Proc:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, cwd=ROOT, env=self.env)
        assert self.proc.stdout is not None
        try:
            self.first_line = (await asyncio.wait_for(self.proc.stdout.readline(), 60)).decode().strip()
        except BaseException:  # it never said it was ready: it must not stay behind
            self.kill9()
            await self.proc.wait()
            raise
        self.ps = psutil.Process(self.proc.pid)
        self.drained = drain(self.proc.stdout, self.lines)
        return self

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return times.user + times.system

    def kill9(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)

    async def stop(self, within: float = 60) -> dict[str, Any]:
        """SIGTERM, then the JSON statistics line a worker process prints last (if any); a
        process still there after `within` seconds is killed."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.gather(self.drained, self.proc.wait()), within)
        except TimeoutError:
            self.kill9()
            await self.proc.wait()
            raise
        lines = [line for line in self.lines if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {}


def drain(stream: asyncio.StreamReader, keep: list[str] | None = None) -> asyncio.Future[None]:
    """Read a child's output as it comes, keeping its last 50 lines in `keep`. A pipe nobody
    reads fills (64 KB) and the next write blocks the writer: the Temporal core logs its warnings
    to standard output, so a worker that logs enough (one "Workflow task duration exceeded 5
    seconds" per long local call) would stop in the middle of a write, holding its workflow-task
    slots (docs/performance.md)."""
    async def read() -> None:
        async for line in stream:
            if keep is not None:
                keep.append(line.decode().strip())
                del keep[:-50]
    return asyncio.ensure_future(read())


async def worker(address: str, queue: str, *flags: str, env: dict[str, str] | None = None,
                 identity: str | None = None) -> Proc:
    """A worker process (bench/worker_proc.py), once it polls. Its identity: `identity`, or
    one made up here."""
    identity = identity or f"bench-worker-{uuid.uuid4().hex[:6]}"
    proc = Proc("-m", "bench.worker_proc", address, queue, *flags, "--identity", identity, env=env)
    proc.identity = identity
    await proc.start()
    if proc.first_line != "ready":
        await proc.stop()
        raise RuntimeError(f"the worker process did not start (it said {proc.first_line!r})")
    return proc


async def model_server(latency: float, jitter: float = 0.2) -> tuple[Proc, str]:
    """The scripted HTTP model (bench/model_server.py) and its base URL."""
    proc = await Proc("-m", "bench.model_server", "--latency", str(latency), "--jitter", str(jitter)).start()
    return proc, f"http://127.0.0.1:{int(proc.first_line)}/v1"


async def model_requests(base_url: str) -> int:
    """How many model calls the scripted HTTP model has answered."""
    def get() -> int:
        with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/stats", timeout=10) as r:
            return int(json.loads(r.read())["requests"])
    return await asyncio.to_thread(get)


def temporal_server() -> psutil.Process | None:
    """The dev server process this benchmark started (for its CPU)."""
    for child in psutil.Process().children(recursive=True):
        if "temporal" in child.name():
            return child
    return None


def cpu_of(ps: psutil.Process | None) -> float:
    if ps is None:
        return 0.0
    times = ps.cpu_times()
    return times.user + times.system
