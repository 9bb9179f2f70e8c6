"""A worker that cannot reach Temporal, or is given a namespace that does not exist, says so in
one line and exits 1: the container's command (`python worker.py`) and `durable-teams worker`
alike, never a traceback; an embedded worker raises the typed error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_teams.client.connection import NamespaceNotFound
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [[sys.executable, "worker.py"],
                                     [sys.executable, "-m", "durable_teams", "worker"]])
def test_an_unreachable_server_is_one_line_from_the_worker(command: list[str]) -> None:
    address = f"127.0.0.1:{closed_port()}"
    out = subprocess.run(command, cwd=ROOT, env={**os.environ, "TEMPORAL_ADDRESS": address},
                         capture_output=True, text=True, timeout=60)
    lines = out.stderr.strip().splitlines()
    assert (out.returncode, out.stdout, len(lines)) == (1, "", 1), out.stderr
    assert lines[0].startswith(f"durable-teams worker: no Temporal server at {address}: "), lines[0]


def test_a_namespace_that_does_not_exist_is_one_line_from_the_worker(client: Client) -> None:
    """A cluster set up by someone else, TEMPORAL_NAMESPACE mistyped: one line naming the
    namespace and how to create it, exit 1 (the SDK alone ends in a bare CancelledError)."""
    address, namespace = client.service_client.config.target_host, f"missing-{uuid.uuid4().hex[:6]}"
    out = subprocess.run([sys.executable, "worker.py"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TEMPORAL_ADDRESS": address, "TEMPORAL_NAMESPACE": namespace})
    assert (out.returncode, out.stderr.strip()) == (1, (
        f"durable-teams worker: namespace {namespace!r} does not exist on the Temporal server at {address} "
        f"(create it: temporal operator namespace create --namespace {namespace}; or set TEMPORAL_NAMESPACE)"))


async def test_an_embedded_worker_on_a_missing_namespace_raises_what_is_wrong(client: Client) -> None:
    elsewhere = await Client.connect(client.service_client.config.target_host, namespace="nowhere")
    team = Swarm([Agent("a", "Answers.", model="scripted")]).compile()
    worker = build_worker(elsewhere, [team], ScriptedModel({}), task_queue=f"tq-{uuid.uuid4().hex[:6]}")
    with pytest.raises(NamespaceNotFound, match="namespace 'nowhere' does not exist"):
        async with worker:
            pass
    with pytest.raises(NamespaceNotFound, match="namespace 'nowhere' does not exist"):
        await worker.run()
