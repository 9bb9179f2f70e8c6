"""A streamed Chat Completion (`stream=True`) read chunk by chunk: each text delta goes to
live subscribers as it arrives (durable_teams/live/hub.py), and the chunks add up to the same
completion body a non-streamed call returns, which is then parsed as usual (model_parse.py).
The workflow sees one finished message either way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from .model_parse import BadModelResponse


class StreamAssembler:
    """Adds up `chat.completion.chunk`s: text, tool calls by index, finish reason, usage."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.id: str | None = None
        self.model: str | None = None

    def feed(self, chunk: dict[str, Any]) -> str:
        """Take one chunk; return its text delta."""
        if "error" in chunk:  # an error sent mid-stream: parsed as an error body would be
            self.error = chunk
            return ""
        self.usage = chunk.get("usage") or self.usage
        self.id = chunk.get("id") or self.id
        self.model = chunk.get("model") or self.model
        piece = ""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            piece += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                self._add_call(call)
            self.finish = choice.get("finish_reason") or self.finish
        self.text.append(piece)
        return piece

    def _add_call(self, call: dict[str, Any]) -> None:
        slot = self.calls.setdefault(call.get("index", len(self.calls)), {
            "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        slot["id"] = call.get("id") or slot["id"]
        function = call.get("function") or {}
        slot["function"]["name"] += function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""

    def completion(self) -> dict[str, Any]:
        """The body a non-streamed call would have returned."""
        if self.error is not None:
            return self.error
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        body: dict[str, Any] = {"object": "chat.completion",
                                "choices": [{"index": 0, "message": message, "finish_reason": self.finish}]}
        if self.usage:
            body["usage"] = self.usage
        body.update({k: v for k, v in (("id", self.id), ("model", self.model)) if v})
        return body


async def read_stream(lines: AsyncIterator[str], emit: Callable[[str], None], max_bytes: int) -> dict[str, Any]:
    """Read server-sent `data:` lines until `[DONE]` or the end, emitting text deltas; the
    assembled completion body. More than `max_bytes` in all is refused."""
    assembler = StreamAssembler()
    size = 0
    async for line in lines:
        size += len(line)
        if size > max_bytes:
            raise BadModelResponse("ModelResponseTooLarge",
                                   f"The streamed response passed the {max_bytes:,}-byte limit.")
        if not line.startswith("data:"):
            continue  # comments, event names, keep-alives
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise BadModelResponse("BadModelResponse", f"A streamed chunk is not JSON: {data[:200]!r}",
                                   retry="once") from None
        if isinstance(chunk, dict):
            emit(assembler.feed(chunk))
    return assembler.completion()
