"""What the gateway refuses before anything goes in: a method no route takes (405, JSON), a body
not sent as JSON (415 naming the header to add), and chat fields a team cannot honour, however
they are spelled, or numbers that are not numbers (400 naming the field), through raw HTTP and
the openai client."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from .gateway_helpers import running_gateway

pytestmark = pytest.mark.workflow

REFUSED: list[tuple[str, Any]] = [
    ("tools", {}), ("tools", [{"type": "function", "function": {"name": "f"}}]), ("functions", {}),
    ("functions", [{"name": "f"}]), ("function_call", {"name": "f"}), ("function_call", "f"),
    ("parallel_tool_calls", True), ("parallel_tool_calls", False), ("modalities", ["text", "audio"]),
    ("modalities", "text"), ("audio", {}), ("audio", {"voice": "alloy", "format": "wav"}),
    ("prediction", {"type": "content", "content": "x"}), ("web_search_options", {}), ("logprobs", True),
    ("logprobs", 0), ("top_logprobs", 2), ("temperature", "hot"), ("temperature", 3), ("top_p", -1),
    ("presence_penalty", True), ("frequency_penalty", 9), ("seed", 1.5), ("max_tokens", "garbage"),
    ("max_completion_tokens", 0),
]


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": "echo", "messages": [{"role": "user", "content": "hi"}], **fields}


async def test_a_method_no_route_takes_is_a_405_and_a_body_not_json_a_415(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url) as http:
        refused = [await http.request(method, path, content=b"{}")
                   for method in ("DELETE", "TRACE", "PUT", "PATCH", "PROPFIND", "BREW")
                   for path in ("/threads", "/threads/t-1", "/v1/chat/completions", "/nowhere")]
        plain = await http.post("/v1/chat/completions", content=b"{}")
    assert {r.status_code for r in refused} == {405}
    assert {r.headers["content-type"] for r in refused} == {"application/json"}
    assert refused[0].json()["error"] == {"message": "method 'DELETE' is not allowed: this gateway takes GET and POST",
                                          "type": "method_not_allowed"}
    assert plain.status_code == 415
    assert "add the header 'Content-Type: application/json'" in plain.json()["error"]["message"]


async def test_fields_a_team_cannot_honour_are_refused_however_spelled(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, teams=["echo"]) as url, httpx.AsyncClient(base_url=url) as http:
        raw = [await http.post("/v1/chat/completions", json=chat(**{name: value})) for name, value in REFUSED]
        both = await http.post("/v1/chat/completions", json=chat(max_tokens="x", max_completion_tokens=5))
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError) as by_client:
            await ai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}],
                                             modalities=["text", "audio"])
        with pytest.raises(openai.BadRequestError) as by_extra:
            await ai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}],
                                             max_completion_tokens=5, extra_body={"max_tokens": "garbage"})
    for (name, _), response in zip(REFUSED, raw, strict=True):
        assert response.status_code == 400, (name, response.text)
        assert response.json()["error"]["param"] == name and f"'{name}'" in response.json()["error"]["message"]
    assert both.status_code == 400 and both.json()["error"]["param"] == "max_tokens"
    assert by_client.value.body["param"] == "modalities"  # type: ignore[index]
    assert by_extra.value.body["param"] == "max_tokens"  # type: ignore[index]


@pytest.mark.slow  # five requests, each looking for a worker for about a second
async def test_a_chat_while_no_worker_polls_is_a_503_at_once_and_starts_nothing(client: Client, task_queue: str) -> None:
    import time
    import uuid

    async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        named = f"echo-nobody-{uuid.uuid4().hex[:8]}"
        began = time.monotonic()
        raw = [await http.post("/v1/chat/completions", json=chat(stream=stream), headers=headers)
               for stream in (False, True) for headers in ({}, {"X-Thread-Id": named})]
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError) as by_client:
            await ai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
        took = time.monotonic() - began
        started = [wf async for wf in client.list_workflows(f'TaskQueue = "{task_queue}"')]
    assert [r.status_code for r in raw] == [503] * 4 and by_client.value.status_code == 503
    assert raw[0].json()["error"] == {"type": "no_worker", "message": (
        f"no worker is polling task queue {task_queue!r}: start one (durable-teams worker), then send this again")}
    assert raw[0].headers["retry-after"] == "5"
    assert took < 15 and started == []
