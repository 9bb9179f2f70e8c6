"""Temporal frontend calls per FAANG turn, for every way in, counted by the dev server itself.

    python -m bench.door_calls [--latencies 0 1] [--rounds 1] [--no-streams] [--only WORD ...]

One dev server started with `--metrics-port`: its Prometheus endpoint counts every request its
frontend serves (`service_requests`, by operation). One worker in this process answers from the
FAANG example's script (10 model calls, 5 tool calls a turn), each model call taking the
scripted latency; one gateway (uvicorn, in this process) serves the HTTP doors. For each way in,
a thread is begun the way its clients begin one (its first turn) and its next turn is measured:
the frontend's requests from before the request to the outcome it returns, the workers' task
polls (`Poll*TaskQueue`, which wait whether or not there is work) and liveness reports
(`RecordWorkerHeartbeat`, every few seconds) left out. The first row is the floor:
`durable-teams run`, a one-task conversation, the turn's own work (its start, workflow tasks,
activities and their heartbeats) and nothing else. Each row's other operations are printed on
stderr.

Then each door's streamed turn (the native turn stream, chat and Responses with `stream: true`,
A2A `SendStreamingMessage`, an MCP task read with `tasks/result`, a LangGraph run's
`runs.stream`): its calls, the steps it
showed (the stream's data frames; one for the MCP task's result), and what it adds to the
door's plain request per step shown (the native door's plain counterpart is `send_turn`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import urllib.request
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import uvicorn

from bench import procs
from durable_teams.client.send import send_turn
from durable_teams.client.start import start_conversation
from durable_teams.examples import faang
from durable_teams.gateway import create_app
from durable_teams.gateway.core.connections import server_config
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.worker.build import build_worker
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.messages import Message, ModelResponse, ToolSpec
from durable_teams.workflows.state import ConversationInput

TEAM = "faang"
QUESTION = faang.QUESTION
WORKER_POLLS = re.compile(r"^(Poll\w*TaskQueue|RecordWorkerHeartbeat)$")
"""Workers' task polls, long polls that wait whether or not there is work, and their periodic
liveness reports: not counted."""


class SlowScript(ScriptedModel):
    """The FAANG script, over and over (every turn of a thread the same ten model calls), each
    call answering after `latency` seconds."""

    def __init__(self, latency: float) -> None:
        def step(req, messages, tools):  # noqa: ANN001, ANN202
            steps = faang.SCRIPT[req.agent]
            return steps[req.agent_call_index % len(steps)]
        super().__init__(step)
        self.latency = latency

    async def complete(self, req: Any, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        if self.latency:
            await asyncio.sleep(self.latency)  # the model's own time: nothing to wait for but it
        return await super().complete(req, messages, tools)


def frontend_requests(metrics: str) -> Counter[str]:
    """The requests the frontend served, by operation, from the server's Prometheus text (its
    `service_requests` counters; other services', the server's own system namespace's and the
    workers' `WORKER_POLLS` left out)."""
    counts: Counter[str] = Counter()
    for line in metrics.splitlines():
        if not line.startswith("service_requests{"):
            continue
        labels, value = line.rsplit(" ", 1)
        if 'service_name="frontend"' not in labels or 'namespace="temporal_system"' in labels:
            continue
        operation = re.search(r'operation="([^"]+)"', labels)
        if operation and not WORKER_POLLS.match(operation.group(1)):
            counts[operation.group(1)] += int(float(value))
    return counts


class Frontend:
    """The dev server's count of frontend requests by operation, read from its metrics."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    async def counts(self) -> Counter[str]:
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(self.url, timeout=10).read().decode())
        return frontend_requests(text)

    async def settled(self) -> Counter[str]:
        """The counts once nothing more comes in for a second (what a turn's last steps and
        its reader's last calls add is in)."""
        before = await self.counts()
        while True:
            await asyncio.sleep(1.0)
            now = await self.counts()
            if now == before:
                return now
            before = now


class Ways:
    """Each way in: `begin` makes a thread the way its clients do (not counted) and returns
    what `turn` needs; `turn` sends the measured turn and waits for its outcome."""

    def __init__(self, client: Any, queue: str, url: str) -> None:
        self.client, self.queue, self.url = client, queue, url
        self.http = httpx.AsyncClient(base_url=url, timeout=600)

    async def run(self) -> None:
        """`durable-teams run faang "..."`, in a process of its own."""
        address = self.client.service_client.config.target_host
        env = {**os.environ, "TEMPORAL_ADDRESS": address}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "durable_teams", "run", TEAM, QUESTION, "--task-queue", self.queue,
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        if faang.ANSWER not in out.decode():
            raise RuntimeError(f"durable-teams run did not answer: {out.decode()[-500:]}")

    async def python_begin(self) -> str:
        wid = f"bench-{uuid.uuid4().hex[:8]}"
        await start_conversation(self.client, TEAM, ConversationInput(team_name=TEAM, single_turn=False),
                                 id=wid, task_queue=self.queue)
        await self.python_turn(wid)
        return wid

    async def python_turn(self, wid: str) -> None:
        reply = await send_turn(self.client, wid, QUESTION)
        check(reply.text)

    async def native_begin(self) -> str:
        created = await self.http.post("/threads", json={"team": TEAM})
        thread = created.json()["thread_id"]
        await self.native_turn(thread)
        return str(thread)

    async def native_turn(self, thread: str) -> None:
        done = None
        async with self.http.stream("POST", f"/threads/{thread}/turns", json={"text": QUESTION}) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and json.loads(line[5:])["type"] == "done":
                    done = json.loads(line[5:])["text"]
        check(done)

    async def chat(self, messages: list[dict[str, str]], thread: str | None = None) -> httpx.Response:
        response = await self.http.post("/v1/chat/completions", json={"model": TEAM, "messages": messages},
                                        headers={"X-Thread-Id": thread} if thread else {})
        check(response.json()["choices"][0]["message"]["content"])
        return response

    async def chat_header_begin(self) -> str:
        first = await self.chat([{"role": "user", "content": QUESTION}])
        return first.headers["X-Thread-Id"]

    async def chat_header_turn(self, thread: str) -> None:
        await self.chat([{"role": "user", "content": QUESTION}], thread)

    async def chat_history_begin(self) -> None:
        await self.chat([{"role": "user", "content": f"{QUESTION} ({uuid.uuid4().hex[:6]})"}])

    async def responses_begin(self) -> str:
        return await self.responses_turn(None)

    async def responses_turn(self, previous: str | None) -> str:
        body = {"model": TEAM, "input": QUESTION} | ({"previous_response_id": previous} if previous else {})
        response = (await self.http.post("/v1/responses", json=body)).json()
        check(response["output"][-1]["content"][0]["text"])
        return str(response["id"])

    async def a2a(self, context: str | None) -> str:
        message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": QUESTION}]}
        if context:
            message["contextId"] = context
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": message}}  # blocking: the A2A default
        answer = (await self.http.post(f"/a2a/{TEAM}", json=body, headers={"A2A-Version": "1.0"})).json()
        task = answer["result"]["task"]
        check(task["status"]["message"]["parts"][0]["text"])
        return str(task["contextId"])

    async def mcp(self, thread: str | None) -> str:
        arguments = {"message": QUESTION} | ({"thread_id": thread} if thread else {})
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TEAM, "arguments": arguments}}
        answer = (await self.http.post("/mcp", json=body, headers={
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})).json()
        result = answer["result"]["structuredContent"]
        check(result.get("text"))
        return str(result["thread_id"])

    async def sse(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> list[Any]:
        """The data frames of a streamed response (`[DONE]` left out), parsed."""
        frames: list[Any] = []
        async with self.http.stream("POST", path, json=body, headers=headers or {}) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    frames.append(json.loads(line[5:]))
        return frames

    async def native_stream(self, thread: str) -> int:
        frames = await self.sse(f"/threads/{thread}/turns", {"text": QUESTION})
        check(next(f["text"] for f in frames if f["type"] == "done"))
        return len(frames)

    async def chat_stream(self, thread: str) -> int:
        frames = await self.sse("/v1/chat/completions", {"model": TEAM, "stream": True, "messages": [
            {"role": "user", "content": QUESTION}]}, {"X-Thread-Id": thread})
        check("".join(c["delta"].get("content") or "" for f in frames for c in f.get("choices", [])))
        return len(frames)

    async def responses_stream(self, previous: str) -> int:
        frames = await self.sse("/v1/responses", {"model": TEAM, "input": QUESTION, "stream": True,
                                                  "previous_response_id": previous})
        done = next(f["response"] for f in frames if f.get("type") == "response.completed")
        check(done["output"][-1]["content"][0]["text"])
        return len(frames)

    async def a2a_stream(self, context: str) -> int:
        message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": QUESTION}],
                   "contextId": context}
        frames = await self.sse(f"/a2a/{TEAM}", {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                                                 "params": {"message": message}}, {"A2A-Version": "1.0"})
        last = frames[-1]["result"]
        status = (last.get("statusUpdate") or last.get("task"))["status"]
        check(status["message"]["parts"][0]["text"])
        return len(frames)

    async def langgraph(self, thread: str | None) -> str:
        """A LangGraph run (`runs.wait`) on a thread the LangGraph door made (one made first when none given)."""
        if thread is None:
            thread = str((await self.http.post("/langgraph/threads", json={})).json()["thread_id"])
        answer = (await self.http.post(f"/langgraph/threads/{thread}/runs/wait", json={
            "assistant_id": TEAM, "input": {"messages": [{"role": "user", "content": QUESTION}]}})).json()
        check(answer["messages"][-1]["content"])
        return thread

    async def langgraph_stream(self, thread: str) -> int:
        """`runs.stream` in its default mode (`values`): the conversation each time it grows."""
        frames = await self.sse(f"/langgraph/threads/{thread}/runs/stream", {
            "assistant_id": TEAM, "input": {"messages": [{"role": "user", "content": QUESTION}]}})
        check(frames[-1]["messages"][-1]["content"])
        return len(frames)

    async def mcp_task(self, thread: str) -> int:
        """A task-augmented `tools/call` (MCP 2025-11-25), then `tasks/result`, which waits for it."""
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

        async def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = (await self.http.post("/mcp", json=body, headers=headers)).json()
            return dict(answer["result"])
        created = await rpc("tools/call", {"name": TEAM, "arguments": {"message": QUESTION, "thread_id": thread},
                                           "task": {"ttl": 600000}})
        result = await rpc("tasks/result", {"taskId": created["task"]["taskId"]})
        check(result["structuredContent"]["text"])
        return 1

    def streamed(self) -> list[tuple[str, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[int]]]]:
        """(streamed way in, begin, measured turn returning the frames it showed)."""
        async def previous() -> str:
            return await self.responses_turn(None)
        return [
            ("native `POST /threads/{id}/turns`", self.native_begin, self.native_stream),
            ("chat, `stream: true`", self.chat_header_begin, self.chat_stream),
            ("Responses, `stream: true`", previous, self.responses_stream),
            ("A2A `SendStreamingMessage`", lambda: self.a2a(None), self.a2a_stream),
            ("MCP task, `tasks/result`", lambda: self.mcp(None), self.mcp_task),
            ("LangGraph `runs.stream`", lambda: self.langgraph(None), self.langgraph_stream),
        ]

    def all(self) -> list[tuple[str, Callable[[], Awaitable[Any]] | None, Callable[[Any], Awaitable[Any]]]]:
        """(way in, begin, measured turn)."""
        history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": faang.ANSWER}]
        resent: dict[str, str] = {}

        async def history_begin() -> None:
            resent["first"] = f"{QUESTION} ({uuid.uuid4().hex[:6]})"
            await self.chat([{"role": "user", "content": resent["first"]}])

        async def history_turn(_: object) -> None:
            await self.chat([{"role": "user", "content": resent["first"]}, history[1], history[0]])

        return [
            ("`durable-teams run` (one-task conversation: the floor)", None, lambda _: self.run()),
            ("Python `send_turn` (docs/conversations.md)", self.python_begin, self.python_turn),
            ("native `POST /threads/{id}/turns` (streamed)", self.native_begin, self.native_turn),
            ("chat, `X-Thread-Id`", self.chat_header_begin, self.chat_header_turn),
            ("chat, history-matched", history_begin, history_turn),
            ("Responses, `previous_response_id`", self.responses_begin, self.responses_turn),
            ("A2A `SendMessage` (blocking)", lambda: self.a2a(None), self.a2a),
            ("MCP `tools/call`", lambda: self.mcp(None), self.mcp),
            ("LangGraph `runs.wait`", lambda: self.langgraph(None), self.langgraph),
        ]


def check(text: object) -> None:
    if not isinstance(text, str) or not text.startswith(faang.ANSWER):  # a chat reply may end with a mark
        raise RuntimeError(f"the turn did not end with FAANG's answer: {text!r}")


async def serve_gateway(client: Any, queue: str) -> tuple[uvicorn.Server, asyncio.Future[None], str]:
    app = create_app(client, task_queue=queue, teams=[TEAM], cards=[card_of(faang.build().compile().spec)])
    port = free_port()
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, log_level="warning"))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.05)
    return server, serving, f"http://127.0.0.1:{port}"


async def measured(frontend: Frontend, begin: Callable[[], Awaitable[Any]] | None,
                   turn: Callable[[Any], Awaitable[Any]], rounds: int) -> tuple[Counter[str], Any]:
    """The median round's calls by operation (of `rounds` turns, each on a thread `begin` made),
    and what its turn returned."""
    tallies = []
    for _ in range(rounds):
        state = await begin() if begin else None
        before = await frontend.settled()
        shown = await turn(state)
        tallies.append((await frontend.settled() - before, shown))
    return sorted(tallies, key=lambda t: t[0].total())[len(tallies) // 2]


PLAIN_OF = {"native": "Python", "chat": "chat, `X-Thread-Id`", "Responses": "Responses", "A2A": "A2A", "MCP": "MCP",
            "LangGraph": "LangGraph"}
"""Each streamed way's plain counterpart (the native door has only its stream: the Python
client's `send_turn` is its plain turn), by the first word of the names."""


async def one_latency(client: Any, frontend: Frontend, latency: float, rounds: int, streams: bool,
                      only: list[str] | None = None) -> None:
    queue = f"doors-{uuid.uuid4().hex[:6]}"
    compiled = faang.build().compile()
    async with build_worker(client, [compiled], SlowScript(latency), task_queue=queue):
        server, serving, url = await serve_gateway(client, queue)
        ways = Ways(client, queue, url)
        try:
            print(f"\nmodel latency {latency:g} s ({rounds} round(s); calls per turn, the median):\n")
            print("| way in | calls per turn | `QueryWorkflow` | `PollWorkflowExecutionHistory` | x the floor |")
            print("|---|---:|---:|---:|---:|")
            floor, plain = None, {}
            for name, begin, turn in ways.all():
                if only and floor is not None and not any(word in name for word in only):
                    continue
                tally, _ = await measured(frontend, begin, turn, rounds)
                total = tally.total()
                floor = floor or total
                plain[name] = total
                print(f"| {name} | {total} | {tally['QueryWorkflow']} | {tally['PollWorkflowExecutionHistory']} "
                      f"| {total / floor:.2f} |", flush=True)
                others = ", ".join(f"{op} {n}" for op, n in tally.most_common())
                print(f"({name}: {others})", file=sys.stderr, flush=True)
            if streams:
                await streamed_table(frontend, ways, plain, rounds, only)
        finally:
            await ways.http.aclose()
            server.should_exit = True
            await serving


async def streamed_table(frontend: Frontend, ways: Ways, plain: dict[str, int], rounds: int,
                         only: list[str] | None = None) -> None:
    """Each streamed way's calls per turn, the frames it showed, and the calls it adds to its
    plain counterpart's per frame shown."""
    print(f"\nstreamed turns ({rounds} round(s), the median):\n")
    print("| streamed way in | calls per turn | `QueryWorkflow` | `PollWorkflowExecutionHistory` "
          "| steps shown | plain request | added calls per step shown |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, begin, turn in ways.streamed():
        if only and not any(word in name for word in only):
            continue
        tally, shown = await measured(frontend, begin, turn, rounds)
        total = tally.total()
        counterpart = next((v for k, v in plain.items() if PLAIN_OF[name.split()[0].strip(",")] in k), None)
        added = f"{(total - counterpart) / max(shown, 1):.2f}" if counterpart is not None else "(not run)"
        print(f"| {name} | {total} | {tally['QueryWorkflow']} | {tally['PollWorkflowExecutionHistory']} "
              f"| {shown} | {counterpart if counterpart is not None else '(not run)'} | {added} |", flush=True)
        others = ", ".join(f"{op} {n}" for op, n in tally.most_common())
        print(f"({name}: {others})", file=sys.stderr, flush=True)


async def main(latencies: list[float], rounds: int, streams: bool = True, only: list[str] | None = None) -> None:
    port = free_port()
    async with await procs.dev_server(extra_args=["--metrics-port", str(port)]) as env:
        frontend = Frontend(port)
        print("\n## Temporal frontend calls per FAANG turn (10 model calls, 5 tool calls), by way in\n")
        for latency in latencies:
            await one_latency(env.client, frontend, latency, rounds, streams, only)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 1.0],
                        help="the scripted model's latency per call, seconds (default 0 1)")
    parser.add_argument("--rounds", type=int, default=1, help="turns measured per way in (the median is shown)")
    parser.add_argument("--no-streams", action="store_true", help="leave the streamed turns' table out")
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="only the ways in whose name has one of these words (the floor always)")
    args = parser.parse_args()
    asyncio.run(main(args.latencies, args.rounds, not args.no_streams, args.only))
