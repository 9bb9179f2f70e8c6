"""A worker in its own process, for tests that kill it or replace it with another release:

    python -m tests.worker_process ADDR QUEUE [module:WorkflowClass]

The optional third argument serves another version of TeamWorkflow (tests/next_release.py).
With DURABLE_TEAMS_TEST_MODEL_URL set, the model is that OpenAI-compatible endpoint, streamed
(tests/fake_openai.py), and the team `echo` (one agent) is served too. The live-delta hub is
the one DURABLE_TEAMS_LIVE_URL names, as for any worker."""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from durable_teams.activities.model import ModelBackend, OpenAIBackend
from durable_teams.client.connection import connect
from durable_teams.examples import example_script, example_teams
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel


async def main(address: str, task_queue: str, workflow: str | None = None) -> None:
    client = await connect(address)
    options = {}
    if workflow:
        module, _, name = workflow.partition(":")
        # no cache: every workflow task replays the conversation's whole history from the server
        options = {"workflows": [getattr(importlib.import_module(module), name)],
                   "max_cached_workflows": 0}
    teams = example_teams()
    backend: ModelBackend = ScriptedModel(example_script())
    model_url = os.environ.get("DURABLE_TEAMS_TEST_MODEL_URL")
    if model_url:
        teams.append(Swarm([Agent("echo", "You answer.", model="test-model")], name="echo").compile())
        backend = OpenAIBackend(base_url=model_url, api_key="sk-test", stream=True)
    worker = build_worker(client, teams, backend, task_queue=task_queue, **options)
    # SIGTERM (what a rolling deployment sends) shuts the worker down gracefully: the server is
    # told, so the next task of a conversation this worker had cached goes to another worker at
    # once instead of waiting out the sticky queue's timeout.
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, lambda: asyncio.ensure_future(worker.shutdown()))
    print("worker ready", flush=True)
    # The test reads that one line and no more. The SDK's core writes its warnings to standard
    # output: into a pipe nobody reads they would, once it held 64 KB, block the core mid-write
    # and with it every workflow task of this worker. From here on they go to standard error.
    os.dup2(2, 1)
    await worker.run()


def spawn_worker(address: str, task_queue: str) -> subprocess.Popen[str]:
    """This module as a worker process, once it says it is ready."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "tests.worker_process", address, task_queue],
                            cwd=root, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "worker ready"
    return proc


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
