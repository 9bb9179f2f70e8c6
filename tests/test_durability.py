"""A waiting question survives SIGKILL of the worker and a restart of the server itself; the
`temporal` CLI binary starts a team from JSON, sends the answer and reads the query."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_teams.client.connection import connect
from durable_teams.examples import support
from durable_teams.worker.devserver import DevServer, free_port
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import binary
from .waiting import asked, until
from .worker_process import spawn_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def temporal_cli(address: str, *args: str) -> str:
    out = subprocess.run([binary("temporal"), *args, "--address", address, "-o", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


async def test_question_survives_worker_sigkill_and_server_restart(tmp_path: Path) -> None:
    server = DevServer(port=free_port(), ui_port=free_port(), db_file=tmp_path / "temporal.db").start()
    task_queue = f"durable-{uuid.uuid4().hex[:6]}"
    worker = spawn_worker(server.address, task_queue)
    try:
        client = await connect(server.address)
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="support", task=support.QUESTION),
            id=f"durable-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        await until(lambda: asked(handle, "q1"))
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        # the server goes down too, and comes back on the same database file
        server.stop()
        server = DevServer(port=server.port, ui_port=server.ui_port, db_file=server.db_file).start()
        worker = spawn_worker(server.address, task_queue)
        client = await connect(server.address)
        handle = client.get_workflow_handle_for(TeamWorkflow.run, handle.id)
        await until(lambda: asked(handle, "q1"))
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id="q1", text="Order 4711"))
        await until(lambda: asked(handle, "q2"))
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id="q2", approved=True))
        result = await handle.result()
        full = await handle.query(TeamWorkflow.transcript, True)
        asks = [c for m in full for c in m.tool_calls if c.name == "ask_human"]
    finally:
        worker.kill()
        server.stop()
    assert result.answer == support.ANSWER
    assert len(asks) == 1  # nothing asked twice
    assert [m.content for m in full].count("Order 4711") == 1


async def test_temporal_cli_starts_signals_and_queries(client: Client, task_queue: str) -> None:
    address = client.service_client.config.target_host
    proc = spawn_worker(address, task_queue)
    try:
        workflow_id = f"cli-{uuid.uuid4().hex[:6]}"
        temporal_cli(address, "workflow", "start", "--type", "TeamWorkflow", "--task-queue", task_queue,
                     "--workflow-id", workflow_id,
                     "--input", json.dumps({"team_name": "support", "task": support.QUESTION}))
        handle = client.get_workflow_handle_for(TeamWorkflow.run, workflow_id)
        await until(lambda: asked(handle, "q1"))
        pending = json.loads(temporal_cli(address, "workflow", "query", "--workflow-id", workflow_id,
                                          "--name", "pending_questions"))
        assert pending["queryResult"][0][0]["question_id"] == "q1"
        temporal_cli(address, "workflow", "signal", "--workflow-id", workflow_id, "--name", "human_reply",
                     "--input", json.dumps({"question_id": "q1", "text": "Order 4711"}))
        await until(lambda: asked(handle, "q2"))
        temporal_cli(address, "workflow", "signal", "--workflow-id", workflow_id, "--name", "human_reply",
                     "--input", json.dumps({"question_id": "q2", "approved": True}))
        result = await handle.result()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert result.status == "completed"
