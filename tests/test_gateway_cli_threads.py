"""A thread started from the CLI is the same thread to the gateway as one it started: `GET
/threads/{id}` names its team, and MCP refuses it to another team's tool (`TeamMismatch`); a
turn sent to a conversation that failed is refused with why it failed; `durable-teams serve`
says at start where each door is."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp.client.client import Client as McpClient
from temporalio.client import Client

from durable_teams.cli.serve import door_lines
from durable_teams.examples import acme
from durable_teams.gateway.mcp_door import McpDoor
from durable_teams.gateway.threads import Gateway
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import ROOT, cli_env, run_cli
from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def test_a_thread_started_by_the_cli_has_its_team_for_the_gateway_and_the_mcp_door(
        client: Client, task_queue: str) -> None:
    thread = f"acme-{uuid.uuid4().hex[:8]}"
    gateway = Gateway(client, task_queue, poll_seconds=0.05, teams=["acme", "support"])
    door = McpDoor(gateway, {"acme": "ACME.", "support": "Support."})
    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        chatted = await run_cli("chat", "acme", "--thread", thread, env=cli_env(client, task_queue),
                                stdin="I want to buy something\n")
        async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url) as http:
            status = (await http.get(f"/threads/{thread}")).json()
        async with McpClient(door.server()) as mcp:
            other_team = await mcp.call_tool("support", {"message": "refund", "thread_id": thread})
        turns = (await gateway.status(thread)).turns

    assert chatted.code == 0, chatted
    assert status["team"] == "acme", status
    assert other_team.is_error
    assert other_team.content[0].text == f"TeamMismatch: thread {thread} belongs to team 'acme', not 'support'"
    assert turns == 1  # nothing was posted into it


async def test_a_turn_for_a_thread_whose_team_no_worker_serves_is_refused_with_why(
        client: Client, task_queue: str) -> None:
    """Refused before the stream (409) or in it (an `error` event), by how far the workflow got
    before it failed: either way the reason is the workflow's own."""
    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
            started = await http.post("/threads", json={"team": "acmee"})
            thread = started.json()["thread_id"]
            sent = await http.post(f"/threads/{thread}/turns", json={"text": "hello"})
    if sent.status_code == 200:  # the stream had begun: its one event is the error
        events = [json.loads(line[len("data: "):]) for line in sent.text.splitlines() if line.startswith("data: ")]
        assert [e["type"] for e in events] == ["error"], sent.text
        message = events[0]["text"]
    else:
        assert sent.status_code == 409, sent.text
        message = sent.json()["error"]["message"]

    assert started.status_code == 201, started.text
    assert message.startswith((f"thread {thread} has ended (FAILED): ",
                               f"conversation {thread} ended (FAILED) before answering this turn: ")), message
    assert message.endswith("No team named 'acmee' on this worker (known: acme)."), message


@asynccontextmanager
async def serving(client: Client, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", "serve", "--port", str(port), "--team", "tests.test_mcp_door:SHOP_TEAM",
        cwd=ROOT, env=cli_env(client), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def test_serve_prints_where_each_door_is_at_start(client: Client) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with serving(client, port) as proc:
        assert proc.stderr is not None
        printed: list[str] = []
        while not any("Uvicorn running" in line for line in printed):
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert line, f"serve ended: {printed}"
            printed.append(line.decode().rstrip())
        async with httpx.AsyncClient() as http:
            models = await http.get(f"{url}/v1/models")
            card = await http.get(f"{url}/a2a/shop/.well-known/agent-card.json")

    expected = door_lines(url, ["shop"], mcp=importlib.util.find_spec("mcp") is not None,
                          a2a=importlib.util.find_spec("a2a") is not None)
    start = printed.index(expected[0])
    assert printed[start:start + len(expected)] == expected
    assert f"  chat completions:  {url}/v1/chat/completions  (models: {url}/v1/models)" in expected
    assert models.status_code == 200 and [m["id"] for m in models.json()["data"]] == ["shop"]
    assert card.status_code == 200 or importlib.util.find_spec("a2a") is None
