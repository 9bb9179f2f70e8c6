"""Running the real CLI in a subprocess, with stdout and stderr apart, every wait bounded."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def cli_env(client: Client | None, task_queue: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a CLI run against the test server (or, with no client, none)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_TASK_QUEUE")}
    if client is not None:
        env["TEMPORAL_ADDRESS"] = client.service_client.config.target_host
    if task_queue is not None:
        env["TEMPORAL_TASK_QUEUE"] = task_queue
    env.update(extra)
    return env


async def run_cli(*args: str | bytes, env: dict[str, str], stdin: str = "", timeout: float = 60) -> Outcome:  # noqa: ASYNC109 - at the deadline the process is killed too
    """`python -m durable_teams ARGS`; fails the test if it does not end within `timeout`."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", *args, cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout=timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"durable-teams {args} did not end within {timeout} s") from None
    assert proc.returncode is not None
    return Outcome(proc.returncode, out.decode(), err.decode())


def one_line_failure(outcome: Outcome) -> str:
    """The single line a failed command printed, after checking it is exactly that."""
    assert outcome.code == 1, outcome
    assert "Traceback" not in outcome.both and "Fatal Python error" not in outcome.both, outcome
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1, outcome
    return lines[0]


async def cli(
    client: Client, *args: str, stdin: str = "", task_queue: str | None = None, returncode: int = 0
) -> str:
    """Run `python -m durable_teams ARGS` against the test server; with `task_queue`, against a
    worker the test hosts on that queue."""
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host}
    if task_queue is not None:
        env["TEMPORAL_TASK_QUEUE"] = task_queue
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", *args, cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout=120)
    assert proc.returncode == returncode, out.decode()
    return out.decode()


def worker_refusal(**env: str) -> tuple[int, str, str]:
    """`python worker.py` with `env` set and no server to reach: its exit code, stdout and
    stderr (a setting it refuses ends it before it connects)."""
    done = subprocess.run([sys.executable, "worker.py"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1", **env})
    return done.returncode, done.stdout, done.stderr.strip()
