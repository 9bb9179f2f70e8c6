"""An OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted responses (stdlib only).

The real openai client talks to it, so the model activity's HTTP path (status codes,
retry-after, malformed tool arguments) is exercised without any network.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str | None = None, tool_calls: list[tuple[str, str]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """A ChatCompletion body; tool_calls are (name, raw argument string) pairs."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeOpenAI:
    """Queue responses with `reply(...)`; read what was asked in `requests`."""

    def __init__(self) -> None:
        self.responses: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if fake.responses:
                    status, payload, headers = fake.responses.pop(0)
                else:
                    status, payload, headers = 500, {"error": {"message": "script exhausted"}}, {}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.responses.append((status, body, headers or {}))

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.reply({"error": {"message": message, "type": "test"}}, status, headers)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
