"""An OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted responses (stdlib only).

The real openai client talks to it, so the model activity's HTTP path (status codes,
`retry-after`, malformed tool arguments, what is actually sent) is exercised without a network.
Use it as a context manager (`with FakeOpenAI() as fake:`) or through the `fake_openai` fixture.

It can also misbehave: a queued `Raw` response is sent byte for byte (any status, content type,
body; after a delay, dripped slowly, or the connection dropped), and with `modes` given
(tests/hostile_openai.py) a request whose model is `hostile:<mode>` gets that mode's response
when nothing is queued, so a team's agents can each meet their own fault.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PATHS = ("/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses",
         "/v1/embeddings", "/embeddings")

Scripted = tuple[int, dict[str, Any], dict[str, str]]
"""One scripted response: (HTTP status, JSON body, extra headers)."""


@dataclass
class Raw:
    """A response sent exactly as given: any bytes, status and content type."""

    body: bytes | str = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (cut short when the server stops): a hung endpoint."""
    drip: float = 0.0
    """Seconds between chunks of 16 bytes once the headers are sent: a body that never ends."""
    drop: bool = False
    """Close the connection without any response."""
    content_length: bool = True
    """Send Content-Length (else the body is delimited by closing the connection)."""
    declared_length: int | None = None
    """A Content-Length to claim instead of the true one (more than is sent: a cut body)."""
    pause_after: int | None = None
    """Send this many bytes of the body, then wait for `resume` (a stream caught mid-way)."""
    resume: threading.Event | None = None


Response = Scripted | Raw
Mode = Callable[[dict[str, Any]], Raw]
"""A hostile mode: the request body -> the response."""


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


class QuietHTTPServer(ThreadingHTTPServer):
    """Clients that give up (the timeout cases) reset their connections: expected here, so
    not printed as a traceback; anything else still is."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeOpenAI:
    """Queue responses with `push`/`reply`/`error`; read what was asked in `requests`
    (JSON bodies), `headers` (lower-cased names) and `times` (monotonic arrival times).

    With the queue empty it answers 500 with `x-should-retry: false`, so a test that runs out
    of script fails fast instead of retrying.
    """

    def __init__(self, responses: Iterable[Response] = (),
                 modes: Mapping[str, Mode] | None = None,
                 script: Callable[[str, dict[str, Any]], Response | None] | None = None) -> None:
        self.responses: list[Response] = list(responses)
        self.modes = dict(modes or {})
        self.script = script
        """`(path, body) -> response`, asked when nothing is queued (None: not scripted)."""
        self.stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.times: list[float] = []
        self.lock = threading.Lock()
        self.server = QuietHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

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
                    scripted = fake.next_response(path, fake.requests[-1])
                if isinstance(scripted, Raw):
                    self._send_raw(scripted)
                else:
                    status, payload, headers = scripted
                    self._send_raw(Raw(json.dumps(payload), status, headers=headers))

            def _send_raw(self, raw: Raw) -> None:
                if raw.delay and fake.stopping.wait(raw.delay):
                    return
                if raw.drop:
                    self.close_connection = True
                    return
                data = raw.body.encode() if isinstance(raw.body, str) else raw.body
                self.send_response(raw.status)
                if raw.content_type:
                    self.send_header("Content-Type", raw.content_type)
                if raw.content_length:
                    self.send_header("Content-Length", str(raw.declared_length or len(data)))
                    self.close_connection = raw.declared_length is not None
                else:
                    self.close_connection = True
                for key, value in raw.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    if raw.pause_after is not None and raw.resume is not None:
                        self._write(data[:raw.pause_after], 0)
                        self.wfile.flush()
                        raw.resume.wait(60)  # bounded: a test that never resumes fails, never hangs
                        data = data[raw.pause_after:]
                    self._write(data, raw.drip)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a hostile test expects

            def _write(self, data: bytes, drip: float) -> None:
                if not drip:
                    self.wfile.write(data)
                    return
                for i in range(0, len(data), 16):
                    if fake.stopping.wait(drip):
                        return
                    self.wfile.write(data[i:i + 16])
                    self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def next_response(self, path: str, body: dict[str, Any]) -> Response:
        """The queued response, else the hostile mode the model name asks for, else a 500."""
        model = str(body.get("model") or "")
        if path not in PATHS:
            return (404, error_body(f"no route {path}"), {})
        if self.responses:
            return self.responses.pop(0)
        scripted = self.script(path, body) if self.script is not None else None
        if scripted is not None:
            return scripted
        if model.startswith("hostile:") and model[8:] in self.modes:
            return self.modes[model[8:]](body)
        return (500, error_body("fake server: script exhausted"), {"x-should-retry": "false"})

    def raw(self, response: Raw) -> None:
        """Queue one response sent byte for byte."""
        with self.lock:
            self.responses.append(response)

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
        self.stopping.set()
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


def sse_frames(*pieces: str) -> list[str]:
    """A streamed Chat Completion's frames, one per text piece."""
    chunks = [{"index": 0, "delta": {"role": "assistant", "content": p}} for p in pieces]
    chunks.append({"index": 0, "delta": {}, "finish_reason": "stop"})
    return [f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [c]})}\n\n" for c in chunks] \
        + ["data: [DONE]\n\n"]


def held_answer(first: str, rest: str) -> tuple[Raw, threading.Event]:
    """An answer whose first piece is sent at once and whose rest waits for the event."""
    frames = sse_frames(first, rest)
    resume = threading.Event()
    return Raw(content_type="text/event-stream", body="".join(frames), pause_after=len(frames[0].encode()),
               resume=resume), resume


# ---- the Responses API (/v1/responses) -------------------------------------------------------


def response_body(content: str | None = None, tool_calls: Sequence[tuple[str, str, str]] = (), *,
                  reasoning: str | None = None, model: str = "test-model", status: str = "completed",
                  incomplete_reason: str | None = None) -> dict[str, Any]:
    """A Response object: an optional reasoning item (its `encrypted_content` the given text),
    the text as an output message, and function calls as (call id, name, raw arguments)."""
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        output.append({"type": "reasoning", "id": f"rs_{len(reasoning)}", "summary": [],
                       "encrypted_content": reasoning})
    if content is not None:
        output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": content, "annotations": []}]})
    for call_id, name, arguments in tool_calls:
        output.append({"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
                       "arguments": arguments, "status": "completed"})
    return {"id": "resp_test", "object": "response", "created_at": 0, "model": model, "status": status,
            "error": None, "output": output,
            "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
            "usage": {"input_tokens": 13, "output_tokens": 5, "total_tokens": 18}}


def response_stream(body: dict[str, Any], pieces: Sequence[str] = ()) -> Raw:
    """`body` streamed as the Responses API streams: `response.created`, a
    `response.output_text.delta` per piece (default: the text word by word), then
    `response.completed` carrying the whole object."""
    text = "".join(p["text"] for item in body["output"] if item["type"] == "message" for p in item["content"])
    pieces = list(pieces) or re.findall(r"\S+\s*|\s+", text)
    events = [{"type": "response.created", "response": {**body, "status": "in_progress", "output": []}}]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                "content_index": 0, "delta": piece} for piece in pieces]
    events.append({"type": f"response.{body['status']}", "response": body})
    frames = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Raw(frames, content_type="text/event-stream")
