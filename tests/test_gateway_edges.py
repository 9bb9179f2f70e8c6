"""The gateway at its edges, as an attacker or a careless client meets it: requests h11 cannot
parse, odd digits and blank tasks, stream options of the wrong type, several first requests on
one new thread at once, a task retried after its run ended, an answer while no worker runs, and
a retried request whose turn asked a question, a client leaving a stream, and an answer to a
question no longer open."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.refusals import QuestionClosed, ReplyRejected
from durable_teams.client.send import send_reply
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.openai_chat.stream import until_done
from durable_teams.live.hub import Delta
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import ASKED, DESK, FIRST, desk_script

pytestmark = pytest.mark.workflow

CALLS: list[str] = []


def echo_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    CALLS.append(messages[-1]["content"])
    return say(f"heard: {messages[-1]['content']}")


ECHO = Swarm([Agent("echo", "Echo.")], name="echo").compile()


def chat(text: str, **fields: Any) -> dict[str, Any]:
    return {"model": "echo", "messages": [{"role": "user", "content": text}], **fields}


async def raw_http(url: str, request: bytes) -> tuple[str, dict[str, str], Any]:
    """(status line, headers, JSON body) of one request written byte for byte."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return lines[0], {k.lower(): v for k, v in headers.items()}, json.loads(body)


async def test_malformed_requests_and_fields_are_json_400s(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue) as url:
        bad_http = [b"GET /healthz HTTP/1.1\r\n\r\n",  # no Host
                    b"POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
                    b"POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]
        parsed = [await raw_http(url, request) for request in bad_http]
        async with httpx.AsyncClient(base_url=url) as http:
            digits = [await http.get(f"/threads/t1/events?start={d}") for d in ("%C2%B2", "%D9%A3", "%E2%91%A0")]
            blank = await http.post("/threads", json={"team": "echo", "task": "  "})
            fields = [await http.post("/v1/chat/completions", headers={"X-Thread-Id": f"echo-edge-{n}"},
                                      json=chat("hello", **extra))
                      for n, extra in enumerate([{"stream": True, "stream_options": "x"},
                                                 {"stream": True, "stream_options": {"include_usage": "yes"}},
                                                 {"stream": "yes"}, {"n": True}, {"n": 1.0}])]
        started = [wf.id async for wf in client.list_workflows('WorkflowId STARTS_WITH "echo-edge-"')]

    for status_line, headers, body in parsed:
        assert status_line.startswith("HTTP/1.1 400")
        assert headers["content-type"] == "application/json" and headers["x-content-type-options"] == "nosniff"
        assert body["error"]["type"] == "invalid_request_error"
    assert [r.status_code for r in digits] == [400] * 3
    assert digits[0].json()["error"]["message"] == "'start' must be a whole number, 0 or more"
    assert blank.status_code == 400 and "'task' must be a non-empty string" in blank.json()["error"]["message"]
    assert [r.status_code for r in fields] == [400] * 5
    assert [r.json()["error"]["param"] for r in fields] == [
        "stream_options", "stream_options", "stream", "n", "n"]
    assert started == []  # refused before any thread started, no turn taken


@pytest.mark.slow  # over a second: out of the quick loop
async def test_first_requests_on_one_new_thread_at_once_are_all_taken(client: Client, task_queue: str) -> None:
    CALLS.clear()
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"echo-at-once-{task_queue}"
        answers = await asyncio.gather(*(http.post("/v1/chat/completions", headers={"X-Thread-Id": thread},
                                                   json=chat(f"message {n}")) for n in range(5)))
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)

    assert [r.status_code for r in answers] == [200] * 5
    assert sorted(r.json()["choices"][0]["message"]["content"] for r in answers) == [
        f"heard: message {n}" for n in range(5)]
    assert status.turns == 5 and sorted(CALLS) == [f"message {n}" for n in range(5)]


async def test_a_task_sent_again_after_its_run_ended_does_not_run_again(client: Client, task_queue: str) -> None:
    CALLS.clear()
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url) as http:
        key = {"Idempotency-Key": f"once-{task_queue}"}
        first = await http.post("/threads", headers=key, json={"team": "echo", "task": "run once"})
        thread = first.json()["thread_id"]
        await client.get_workflow_handle(thread).result()
        again = await http.post("/threads", headers=key, json={"team": "echo", "task": "run once"})
        reused = await http.post("/threads", json={"team": "echo", "thread_id": thread})
        runs = [wf.run_id async for wf in client.list_workflows(f'WorkflowId = "{thread}"')]

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {"thread_id": thread, "team": "echo"}
    assert reused.status_code == 409 and reused.json()["error"]["type"] == "already_exists"
    assert len(runs) == 1 and CALLS == ["run once"]


async def test_an_answer_while_no_worker_runs_is_a_429_not_a_hang(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, busy_seconds=0.5) as url, \
            httpx.AsyncClient(base_url=url, timeout=30) as http:
        thread = f"desk-no-worker-{task_queue}"
        async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
            asked = await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread},
                                    json={"model": "desk", "messages": [{"role": "user", "content": FIRST}]})
        answered = await http.post(f"/threads/{thread}/questions/q1", json={"text": "Order 4711"})
        await client.get_workflow_handle(thread).terminate("test over")

    assert asked.json()["choices"][0]["message"]["content"] == ASKED
    assert answered.status_code == 429
    assert answered.json()["error"]["message"].startswith(f"no worker took the answer to {thread} within 0.5 s")


async def test_a_retried_request_whose_turn_asked_a_question_gets_the_question(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-retried-{task_queue}"
        body = {"model": "desk", "messages": [{"role": "user", "content": f"{FIRST}, order 7"}]}
        first = await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread}, json=body)
        retried = await http.post("/v1/chat/completions", json=body,
                                  headers={"X-Thread-Id": thread, "x-stainless-retry-count": "1"})
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)

    assert [r.json()["choices"][0]["message"]["content"] for r in (first, retried)] == [ASKED, ASKED]
    assert status.turns == 1 and [q.question_id for q in status.pending] == ["q1"]


async def test_a_client_that_leaves_a_stream_leaves_no_task_behind() -> None:
    """`until_done` and `Gateway.until_news` wait for a delta beside the turn; cancelled (the
    client left), they cancel that wait too ("Task was destroyed but it is pending!" otherwise).
    The reader is cancelled only once its wait for a delta is a task of its own, so the test
    cannot pass without reaching the path it checks."""
    deltas: asyncio.Queue[Delta] = asyncio.Queue()
    never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    gw = Gateway(client=None, task_queue="q", poll_seconds=60)  # type: ignore[arg-type]
    before = asyncio.all_tasks()  # the session's own (its server's watchers)

    async def read_stream() -> None:
        async for _ in until_done(never, deltas):
            pass
    for reader in (read_stream, lambda: gw.until_news(never, deltas)):
        waiting = asyncio.ensure_future(reader())
        for _ in range(100):  # each step lets the reader run on to its next await
            inner = asyncio.all_tasks() - before - {waiting, asyncio.current_task()}
            if inner:
                break
            await asyncio.sleep(0)
        assert len(inner) == 1, "the reader never started waiting for a delta"
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0)
        assert (inner.pop()).cancelled()
        assert asyncio.all_tasks() - before == set()
    never.cancel()


async def test_an_answer_to_a_closed_question_is_told_apart(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-closed-{task_queue}"
        await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread},
                        json={"model": "desk", "messages": [{"role": "user", "content": FIRST}]})
        with pytest.raises(ReplyRejected) as blank:
            await send_reply(client, thread, "q1", text=" ")
        await send_reply(client, thread, "q1", text="Order 1")
        closed = [await asyncio.gather(send_reply(client, thread, q, text="Order 2"), return_exceptions=True)
                  for q in ("q1", "q9")]
        await client.get_workflow_handle(thread).terminate("test over")

    assert type(blank.value) is ReplyRejected and str(blank.value) == "Rejected: the answer text is empty"
    assert [type(c[0]) for c in closed] == [QuestionClosed, QuestionClosed]


async def test_past_max_connections_the_answer_is_a_json_503(client: Client, task_queue: str) -> None:
    """Like every other error: JSON, with Retry-After and the security headers (uvicorn's own is
    plain text)."""
    # uvicorn counts the asking connection itself: with a limit of 1, every request is past it
    async with running_gateway(client, task_queue, max_connections=1) as url, httpx.AsyncClient(base_url=url) as http:
        refused = await http.get("/healthz")
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
    assert refused.json()["error"]["type"] == "server_busy"
    assert refused.headers["x-content-type-options"] == "nosniff"
