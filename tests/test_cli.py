"""The CLI as a person uses it: the demos, driven through standard input."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from temporalio.client import Client

ROOT = Path(__file__).resolve().parent.parent


async def cli(client: Client, *args: str, stdin: str = "") -> str:
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", *args, cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout=120)
    assert proc.returncode == 0, out.decode()
    return out.decode()


async def test_faang_demo_prints_the_answer_and_workflow_id(client: Client) -> None:
    out = await cli(client, "demo")
    assert "Model: SCRIPTED" in out
    assert "Answer: The combined headcount of the FAANG companies in 2024 is 1,977,586." in out
    assert "Workflow id: faang-demo-" in out
    assert "[math_expert] add(" in out


async def test_support_demo_takes_answers_at_the_terminal(client: Client) -> None:
    out = await cli(client, "demo", "support", stdin="Order 4711\ny\n")
    assert "Question: Sorry to hear that! What's your order number?" in out
    assert "Approval needed: execute_refund(" in out
    assert "[ask_human result] Order 4711" in out
    assert "[execute_refund result] success" in out
    assert "Answer: Your refund is on its way." in out
