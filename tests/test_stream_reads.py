"""What a stream that shows each step of a turn asks the workflow (docs/performance.md): the
native turn stream and a streamed Responses request read the log at most once per step they
show, and the thread's status not at every step (a Responses stream: at its start and its
outcome). Queries counted by name on the gateway's client, over a FAANG turn (10 model calls,
5 tool calls) on the dev server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from bench.door_calls import SlowScript
from durable_teams.examples import faang

from .conftest import running_worker
from .counting import counted
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway of its own, a 15-step turn


async def frames_of(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[Any]:
    async with http.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        return [json.loads(line[5:]) async for line in response.aiter_lines()
                if line.startswith("data:") and line[5:].strip() != "[DONE]"]


async def test_the_native_and_responses_streams_read_at_most_once_per_step_shown(
        client: Client, task_queue: str) -> None:
    gateway_client, queries = counted(client)
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], SlowScript(0)), \
            running_gateway(gateway_client, task_queue, teams=["faang"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "faang"})).json()["thread_id"]
        queries.asked.clear()
        native = await frames_of(http, f"/threads/{thread}/turns", {"text": faang.QUESTION})
        native_asked = dict(queries.asked)

        first = (await http.post("/v1/responses", json={"model": "faang", "input": faang.QUESTION})).json()
        queries.asked.clear()
        streamed = await frames_of(http, "/v1/responses", {"model": "faang", "input": faang.QUESTION, "stream": True,
                                                           "previous_response_id": first["id"]})
        responses_asked = dict(queries.asked)

    assert native[-1]["type"] == "done" and native[-1]["text"] == faang.ANSWER
    assert len(native) == 25
    assert native_asked.get("log_page", 0) <= len(native), native_asked  # one read a step shown at most
    assert native_asked.get("status", 0) == 0, native_asked  # the reply comes from the turn's outcome wait
    done = next(f["response"] for f in streamed if f.get("type") == "response.completed")
    assert done["output"][-1]["content"][0]["text"] == faang.ANSWER
    assert responses_asked.get("log_page", 0) <= len(streamed), responses_asked
    assert responses_asked.get("status", 0) <= 3, responses_asked  # the request's own, the stream's start and outcome
