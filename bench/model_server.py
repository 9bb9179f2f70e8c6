"""A scripted OpenAI-compatible model for the benchmark, answering after a set latency.

    python -m bench.model_server [--latency 1.0] [--jitter 0.2]

Prints its port on the first line of stdout, then serves until killed. asyncio, HTTP/1.1 with
keep-alive, so hundreds of concurrent calls wait cheaply (a thread per call would cost the
shared CPU). Every answer comes `latency` seconds (±`jitter` of it, uniformly) after the request:

- model `bench-<N>`: the benchmark's reader agent: calls `fetch(i=<tool messages so far>)` until
  the transcript holds N-1 tool results, then answers "done" (a conversation of N model calls);
- model `faang-script`: the FAANG walkthrough's replies (bench/faang_model.py), also as a
  stream when the request asks for one (`stream: true`);
- any other model: a short answer (the floor's model call).

`GET /stats` returns `{"requests": <count>}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys

from bench import faang_model

COUNT = 0


def reply(body: dict) -> dict:
    model = str(body.get("model", ""))
    if model == faang_model.MODEL:
        return faang_model.completion(body)
    message: dict = {"role": "assistant", "content": "ok"}
    finish = "stop"
    if model.startswith("bench-"):
        n = int(model.split("-", 1)[1])
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        if done < n - 1:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{done}", "type": "function",
                "function": {"name": "fetch", "arguments": json.dumps({"i": done})}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "done"}
    return {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float,
                 jitter: float) -> None:
    global COUNT
    body: dict = {}
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path.startswith("/stats"):
                payload = {"requests": COUNT}
            else:
                COUNT += 1
                body = json.loads(raw) if raw else {}
                payload = reply(body)
                if latency > 0:
                    await asyncio.sleep(latency * (1 + random.uniform(-jitter, jitter)))
            kind = b"application/json"
            data = json.dumps(payload).encode()
            if method == "POST" and body.get("model") == faang_model.MODEL and body.get("stream"):
                kind, data = b"text/event-stream", faang_model.stream_events(body)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\n"
                         b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(latency: float, jitter: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, latency, jitter), "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--jitter", type=float, default=0.2)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.latency, args.jitter))
    except KeyboardInterrupt:
        sys.exit(0)
