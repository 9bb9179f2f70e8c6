"""An OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted responses (stdlib only).

The real openai client talks to it, so the model activity's HTTP path (status codes,
`retry-after`, malformed tool arguments, what is actually sent) is exercised without a network.
Use it as a context manager (`with FakeOpenAI() as fake:`) or through the `fake_openai` fixture.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PATHS = ("/v1/chat/completions", "/chat/completions")

Scripted = tuple[int, dict[str, Any], dict[str, str]]
"""One scripted response: (HTTP status, JSON body, extra headers)."""


def completion(
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str]] = (),
    *,
    finish_reason: str | None = None,
    model: str = "test-model",
) -> dict[str, Any]:
    """A valid ChatCompletion body; `tool_calls` are (name, raw argument string) pairs, sent
    exactly as given (so a test can send malformed JSON)."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    finish = finish_reason or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def error_body(message: str, kind: str = "test_error") -> dict[str, Any]:
    """The error body OpenAI sends: `{"error": {"message": ..., "type": ...}}`."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class FakeOpenAI:
    """Queue responses with `push`/`reply`/`error`; read what was asked in `requests`
    (JSON bodies), `headers` (lower-cased names) and `times` (monotonic arrival times).

    With the queue empty it answers 500 with `x-should-retry: false`, so a test that runs out
    of script fails fast instead of retrying.
    """

    def __init__(self, responses: Iterable[Scripted] = ()) -> None:
        self.responses: list[Scripted] = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.times: list[float] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                with fake.lock:
                    fake.paths.append(path)
                    fake.times.append(time.monotonic())
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fake.requests.append(json.loads(raw) if raw else {})
                    if path not in PATHS:
                        scripted: Scripted = (404, error_body(f"no route {path}"), {})
                    elif fake.responses:
                        scripted = fake.responses.pop(0)
                    else:
                        scripted = (500, error_body("fake server: script exhausted"),
                                    {"x-should-retry": "false"})
                self._send(*scripted)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
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

        return Handler

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, what OPENAI_BASE_URL would be."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def push(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        """Queue one response."""
        with self.lock:
            self.responses.append((status, body, headers or {}))

    def reply(self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Queue a successful response (usually a `completion(...)`)."""
        self.push(status, body, headers)

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        """Queue an OpenAI-style error response."""
        self.push(status, error_body(message), headers)

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """The `fake_openai` fixture: a running fake endpoint for one test. Import
    `fake_openai_fixture` into a test module (or a conftest) to use it."""
    with FakeOpenAI() as fake:
        yield fake
