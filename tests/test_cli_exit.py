"""How CLI commands end: the SDK core's log goes through Python's logging (stderr), not into the
stdout a script reads; and a command that talked to Temporal ends its process without finalizing
the interpreter, which can hang at exit on the SDK's native threads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import pytest
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import ROOT, cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .inspect_history import task_retried
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

CLOSED = "127.0.0.1:1"

SPY = """
import sys
from temporalio.runtime import Runtime
import durable_teams.worker.core_log as core_log

made = []
real = core_log.core_log_runtime
core_log.core_log_runtime = lambda: made.append(real()) or made[-1]

async def probe(*args):
    print("forwarding" if made and Runtime.default() is made[0] else "not forwarding")
    return 0

if sys.argv[1] == "serve":
    import durable_teams.cli.serve as serve
    serve.run_gateway = probe
else:
    import durable_teams.cli.command_line as cli
    cli.COMMANDS[sys.argv[1]] = probe
from durable_teams.cli.main import main
main(sys.argv[1:])
"""


def test_commands_forward_the_core_log_to_python_logging() -> None:
    """Every command, and the gateway, runs on a runtime whose core logs through the
    `temporalio.core` logger: its warnings reach stderr, never `--no-wait`'s stdout."""
    for argv in (["status", "some-id"], ["run", "faang", "hi", "--no-wait"], ["pending"], ["serve"]):
        done = subprocess.run([sys.executable, "-c", SPY, *argv], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, env=cli_env(None, TEMPORAL_ADDRESS=CLOSED))
        assert (done.returncode, done.stdout, done.stderr) == (0, "forwarding\n", ""), argv


FINALIZED = """
import atexit, sys
atexit.register(lambda: print("interpreter finalized", file=sys.stderr))
from durable_teams.cli.main import main
main(sys.argv[1:])
"""


def test_a_command_ends_its_process_without_finalizing_the_interpreter() -> None:
    """Deterministic: the process ends in `exit_now` (os._exit), so the teardown that could
    deadlock with the SDK's threads never starts (an atexit handler is its first step)."""
    for argv in (["status", "some-id"], ["serve"]):
        done = subprocess.run([sys.executable, "-c", FINALIZED, *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, env=cli_env(None, TEMPORAL_ADDRESS=CLOSED))
        assert done.returncode == 1, done
        assert done.stderr == f"durable-teams: no Temporal server at {CLOSED}\n", argv


async def test_follow_of_a_conversation_whose_task_keeps_failing_exits_every_time(
        client: Client, task_queue: str) -> None:
    wid = f"stuck-follow-{uuid.uuid4().hex[:6]}"
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
        handle = await client.start_workflow("NoSuchWorkflow", "x", id=wid, task_queue=task_queue)
        await until(lambda: task_retried(handle), "its first workflow task failed and retried")
        try:
            outcomes = await asyncio.gather(*(run_cli("follow", wid, env=env, timeout=30) for _ in range(6)))
        finally:
            await handle.terminate()
    for outcome in outcomes:  # the reason, as `status` gives it, not a query's transport error
        assert one_line_failure(outcome).startswith(
            f"durable-teams: conversation {wid} is stuck: its workflow task keeps failing (attempt "), outcome
        assert outcome.out == ""
