"""Streams on the other doors learn of a turn's steps from the worker's announcements on the
live hub (durable_teams/gateway/core/step_news.py), not from a watch of the history: a streamed
Responses request is subscribed to them before its input goes in, so it never watches the
history; a LangGraph run's stream reads the shared conversation at the announced steps that add
to it, not at each step of the history; an MCP task costs a plain `tools/call` and one
description more. The gateway and worker share this process's hub (`LIVE`), as in `durable-teams serve`
with its worker, or over a shared broker."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.step_watch import StepWatch
from durable_teams.examples import faang
from durable_teams.gateway.doors.responses import state as responses_state
from durable_teams.live.hub import LIVE
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .counting import CountingQueries, counted
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # FAANG turns on gateways of their own


def over_and_over() -> ScriptedModel:
    """FAANG's script for every turn of a thread (the same ten model calls each turn)."""
    def step(req, messages, tools):  # noqa: ANN001, ANN202
        steps = faang.SCRIPT[req.agent]
        return steps[req.agent_call_index % len(steps)]
    return ScriptedModel(step)


@asynccontextmanager
async def faang_gateway(client: Client, task_queue: str) -> AsyncIterator[tuple[httpx.AsyncClient, CountingQueries]]:
    """A FAANG worker and a gateway sharing `LIVE`; the gateway's queries counted."""
    gateway_client, queries = counted(client)
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], over_and_over(), live_hub=LIVE), \
            running_gateway(gateway_client, task_queue, live_hub=LIVE, teams=["faang"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http, queries


async def sse_data(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[Any]:
    async with http.stream("POST", path, json=body) as response:
        assert response.status_code == 200, await response.aread()
        return [json.loads(line[5:]) async for line in response.aiter_lines()
                if line.startswith("data:") and line[5:].strip() != "[DONE]"]


async def test_a_streamed_response_is_told_of_its_first_steps_and_never_watches_the_history(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    watches: list[StepWatch] = []

    def watch(client: Client, thread: str) -> StepWatch:
        watches.append(StepWatch(client, thread))
        return watches[-1]
    monkeypatch.setattr(responses_state, "StepWatch", watch)
    async with faang_gateway(client, task_queue) as (http, queries):
        first = (await http.post("/v1/responses", json={"model": "faang", "input": faang.QUESTION})).json()
        queries.asked.clear()
        frames = await sse_data(http, "/v1/responses", {"model": "faang", "input": faang.QUESTION, "stream": True,
                                                        "previous_response_id": first["id"]})
    done = next(f["response"] for f in frames if f["type"] == "response.completed")
    assert done["output"][-1]["content"][0]["text"] == faang.ANSWER
    assert sum(f["type"] == "response.output_item.done" for f in frames) >= 10  # each step shown
    assert watches == []  # its steps came announced from the first: no long poll of the history


async def test_a_langgraph_run_stream_reads_the_conversation_at_the_steps_announced(
        client: Client, task_queue: str) -> None:
    async with faang_gateway(client, task_queue) as (http, queries):
        made = await http.post("/langgraph/threads", json={})
        assert made.status_code == 200, made.text
        thread = made.json()["thread_id"]
        run = {"assistant_id": "faang", "input": {"messages": [{"role": "user", "content": faang.QUESTION}]}}
        assert (await http.post(f"/langgraph/threads/{thread}/runs/wait", json=run)).status_code == 200
        queries.asked.clear()
        frames = await sse_data(http, f"/langgraph/threads/{thread}/runs/stream", run)
    assert len(frames) == 13 and frames[-1]["messages"][-1]["content"] == faang.ANSWER  # `values`, each step
    # the run begun (the thread's status and conversation), then a read of what the shared
    # conversation gained at the steps that add to it (a handoff and its result together), and
    # once at the outcome: not at each step of the history (17 reads before)
    assert queries.asked["transcript"] <= 7, queries.asked
    assert queries.asked["status"] <= 1, queries.asked


async def test_an_mcp_task_adds_one_call_to_a_plain_tools_call(client: Client, task_queue: str) -> None:
    """A task (`tools/call` with `task`, then `tasks/result`) reads what a plain call reads and
    one description more, that of the `tasks/result` request's check that its caller sees the
    task: the task made from the accepted turn, its result from the reply the wait returned."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

    async def rpc(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = (await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                                  headers=headers)).json()
        return dict(answer["result"])
    async with faang_gateway(client, task_queue) as (http, queries):
        call = {"name": "faang", "arguments": {"message": faang.QUESTION}}
        thread = (await rpc(http, "tools/call", call))["structuredContent"]["thread_id"]
        call["arguments"]["thread_id"] = thread
        queries.asked.clear()
        queries.described = 0
        plain = await rpc(http, "tools/call", call)
        plain_reads = (dict(queries.asked), queries.described)
        queries.asked.clear()
        queries.described = 0
        created = await rpc(http, "tools/call", call | {"task": {"ttl": 600000}})
        result = await rpc(http, "tasks/result", {"taskId": created["task"]["taskId"]})
    assert created["task"]["status"] == "working" and created["task"]["taskId"] == f"{thread}::3"
    assert result["structuredContent"] == plain["structuredContent"] == {
        "thread_id": thread, "status": "completed", "text": faang.ANSWER}
    assert result["isError"] is False and result["content"] == [{"type": "text", "text": faang.ANSWER}]
    assert plain_reads == ({"status": 1}, 1)
    assert (dict(queries.asked), queries.described) == ({"status": 1}, 2)
