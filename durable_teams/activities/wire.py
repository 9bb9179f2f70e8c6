"""Building the Chat Completions request body, at a cost per model call that does not grow with
the transcript (beyond copying the body's bytes).

Chat Completions sends the whole transcript with every call. Handed a list of typed message
dicts, the openai client converts every message again on every call (`openai/_utils/_transform.py`
walks each dict against its TypedDict annotations): a profile at 400 calls put 62 % of the
worker's CPU there. Here each message is converted to its wire dict, and encoded to JSON, once:

- `WireCache.messages` turns a view's `Message` objects into `WireDict`s, cached by object
  identity. Views hand out the same `Message` objects call after call (the workflow's log, or
  the model activity's per-worker copy of it), and messages are never changed in place (every
  edit is a `model_copy`), so an object seen before has the same wire form. An entry holds
  its message weakly and is checked against it (`ref() is message`), so a reused id is a miss;
  a collected message's entry goes at the next call, and a finished conversation's messages
  are not kept alive by the cache.
- Given a `stream` (the model activity passes its workflow, run and agent run), it also keeps
  the last view it encoded for that stream: a view that extends it (its messages, read through
  their weak references, compared with one list comparison, identical objects by identity)
  reuses its dicts and encodings, so only the new messages are looked at. The stream goes when
  its first message is collected.
- `encode_body` writes the request body, splicing in the messages' cached JSON with one join;
  the result is the JSON the openai client would send for the same arguments
  (tests/test_wire_body.py).
- `stream_chat_completion` sends those bytes through the openai client's own `post` (same
  headers, auth, timeouts and errors), skipping only its per-call conversion.
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from durable_teams.workflows.messages import Message, ToolSpec, wire_name


def message_dict(m: Message) -> dict[str, Any]:
    """A message's Chat Completions dict (our bookkeeping fields dropped)."""
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        return out
    if m.name and m.role in ("user", "assistant"):
        out["name"] = wire_name(m.name)
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    return out


def tool_dict(t: ToolSpec) -> dict[str, Any]:
    """A tool's Chat Completions `tools` entry."""
    return {"type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}


class WireDict(dict):
    """A message's Chat Completions dict that also carries its JSON encoding (`encoded`).
    Shared between calls: read it, never change it."""

    __slots__ = ("encoded",)

    encoded: bytes


def dumps(obj: Any) -> bytes:
    """JSON as the openai client encodes a request body (`openai._utils._json.openapi_dumps`)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def wire_dict(value: dict[str, Any]) -> WireDict:
    out = WireDict(value)
    out.encoded = dumps(out)
    return out


class WireList(list):
    """A request's `messages` as wire dicts, with their JSON encodings, in order, in `encodings`."""

    __slots__ = ("encodings",)

    encodings: list[bytes]


@dataclass(eq=False)
class _Stream:
    """The last view encoded for one stream (a workflow run's agent run). Its messages are
    held weakly: a finished conversation's messages are not kept alive by this cache."""

    refs: list[weakref.ref[Message]]
    dicts: list[WireDict]
    encodings: list[bytes]
    size: int


class WireCache:
    """Per-worker cache of messages' and tool schemas' wire dicts, and of the last view of each
    stream. Messages are held weakly: an entry, and a stream, goes when its message is collected
    (its conversation finished or left this worker's workflow cache). Besides, least recently
    used out first once the encodings pass `max_bytes`, or the streams `max_streams`."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, max_streams: int = 4096) -> None:
        self.max_bytes = max_bytes
        self.max_streams = max_streams
        self.bytes = 0
        self.stream_bytes = 0
        self.hits = 0
        self.misses = 0
        self.extended = 0
        """Views that extended their stream's last one (only the new messages looked at)."""
        self._entries: OrderedDict[int, tuple[weakref.ref[Any], WireDict]] = OrderedDict()
        self._streams: OrderedDict[Hashable, _Stream] = OrderedDict()
        self._toolsets: OrderedDict[Hashable, tuple[list[ToolSpec], list[dict[str, Any]]]] = OrderedDict()
        self._collected: list[tuple[OrderedDict[Any, Any], Any, weakref.ref[Any]]] = []
        """(table, key, ref) of collected messages, dropped at the next call. A weakref callback
        may run in the middle of this cache's own work (or on another thread), so it only appends."""

    def __len__(self) -> int:
        return len(self._entries)

    def messages(self, instructions: str, messages: list[Message],
                 stream: Hashable | None = None) -> WireList:
        """The request's messages: the system prompt (if any), then the view's. With `stream`,
        a view extending the stream's last one converts only its new messages."""
        self._drop_collected()
        head = [wire_dict({"role": "system", "content": instructions})] if instructions else []
        dicts, encodings = self._view(messages, stream)
        out = WireList(head + dicts)
        out.encodings = [d.encoded for d in head] + encodings
        self._evict()
        return out

    def _view(self, messages: list[Message], stream: Hashable | None) -> tuple[list[WireDict], list[bytes]]:
        known = self._streams.pop(stream, None) if stream is not None else None
        if known is not None:
            self.stream_bytes -= known.size
            if len(known.refs) > len(messages) or messages[:len(known.refs)] != [r() for r in known.refs]:
                known = None  # not an extension (an older view, a retry): from the start
        if known is None:
            known = _Stream([], [], [], 0)
        else:
            self.extended += 1
        fresh = messages[len(known.dicts):]
        new = [self._get(m) for m in fresh]
        dicts, encodings = known.dicts + new, known.encodings + [d.encoded for d in new]
        if stream is not None:
            size = known.size + sum(len(d.encoded) for d in new)
            refs = known.refs + [self._ref(self._streams, stream, m) if i == 0 and not known.refs
                                 else weakref.ref(m) for i, m in enumerate(fresh)]
            self._streams[stream] = _Stream(refs, dicts, encodings, size)
            self.stream_bytes += size
        return dicts, encodings

    def tools(self, tools: list[ToolSpec], stream: Hashable | None = None) -> list[dict[str, Any]]:
        """The request's `tools`. With `stream`, a list equal to the stream's last one reuses
        its dicts: an agent's handoff tools are new (equal) objects on every call."""
        self._drop_collected()
        known = self._toolsets.pop(stream, None) if stream is not None else None
        if known is not None and known[0] == tools:
            out = known[1]
        else:
            out = [self._get(t) for t in tools]
        if stream is not None:
            self._toolsets[stream] = (list(tools), out)
            while len(self._toolsets) > self.max_streams:
                self._toolsets.popitem(last=False)
        self._evict()
        return list(out)

    def _ref(self, table: OrderedDict[Any, Any], key: Any, item: Any) -> weakref.ref[Any]:
        """A weak reference to `item` that drops `table[key]` once `item` is collected."""
        collected = self._collected
        return weakref.ref(item, lambda ref: collected.append((table, key, ref)))

    def _drop_collected(self) -> None:
        while self._collected:
            table, key, ref = self._collected.pop()
            if table is self._entries:
                entry = self._entries.get(key)
                if entry is not None and entry[0] is ref:
                    del self._entries[key]
                    self.bytes -= len(entry[1].encoded)
            else:
                known = self._streams.get(key)
                if known is not None and known.refs and known.refs[0] is ref:
                    del self._streams[key]
                    self.stream_bytes -= known.size

    def _get(self, item: Message | ToolSpec) -> WireDict:
        key = id(item)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is item:
            self.hits += 1
            self._entries.move_to_end(key)
            return entry[1]
        self.misses += 1
        converted = wire_dict(message_dict(item) if isinstance(item, Message) else tool_dict(item))
        if entry is not None:
            self.bytes -= len(entry[1].encoded)
        self._entries[key] = (self._ref(self._entries, key, item), converted)
        self.bytes += len(converted.encoded)
        return converted

    def _evict(self) -> None:
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, (_, converted) = self._entries.popitem(last=False)
            self.bytes -= len(converted.encoded)
        while self._streams and (self.stream_bytes > self.max_bytes or len(self._streams) > self.max_streams):
            _, dropped = self._streams.popitem(last=False)
            self.stream_bytes -= dropped.size


def _encoded(value: Any) -> bytes:
    return value.encoded if isinstance(value, WireDict) else dumps(value)


def encode_body(params: dict[str, Any]) -> bytes:
    """The request body for `chat.completions.create(**params)`, as JSON bytes. Lists of
    messages and tools reuse the encodings their `WireDict`s carry; the messages' encodings are
    spliced in by the one join that makes the body (a megabyte-sized body is copied once)."""
    before: list[bytes] = []
    after: list[bytes] = []
    items: list[bytes] | None = None
    for key, value in params.items():
        if items is None and isinstance(value, WireList) and value.encodings:
            items = value.encodings
            before.append(dumps(key) + b":[")
            continue
        if key in ("messages", "tools") and isinstance(value, list):
            encoded = b"[" + b",".join(_encoded(v) for v in value) + b"]"
        else:
            encoded = dumps(value)
        (before if items is None else after).append(dumps(key) + b":" + encoded)
    if items is None:
        return b"{" + b",".join(before) + b"}"
    head = b"{" + b",".join(before)
    tail = b"]" + b"".join(b"," + part for part in after) + b"}"
    if len(items) == 1:
        return head + items[0] + tail
    return b",".join([head + items[0], *items[1:-1], items[-1] + tail])


_RAW: dict[type, bool] = {}


def supports_raw_body(client: Any) -> bool:
    """Whether this openai client's `post` takes raw bytes (`content=`, in recent openai
    versions); older ones get the ordinary `create` call."""
    kind = type(client)
    if kind not in _RAW:
        try:
            _RAW[kind] = "content" in inspect.signature(client.post).parameters
        except (TypeError, ValueError, AttributeError):
            _RAW[kind] = False
    return _RAW[kind]


def _request_options(timeout: float) -> dict[str, Any]:
    from openai._constants import RAW_RESPONSE_HEADER
    from openai._models import FinalRequestOptions

    options: dict[str, Any] = {"timeout": timeout, "headers": {
        "Content-Type": "application/json", RAW_RESPONSE_HEADER: "stream"}}  # the body unread
    if "security" in getattr(FinalRequestOptions, "model_fields", {}):
        options["security"] = {"bearer_auth": True}  # what `create` sends: the API key only
    return options


def stream_chat_completion(client: Any, params: dict[str, Any], timeout: float) -> Any:
    """`client.chat.completions.with_streaming_response.create(**params, timeout=timeout)`
    (a context manager over the unread response), with the body encoded here."""
    if not supports_raw_body(client):
        return client.chat.completions.with_streaming_response.create(**params, timeout=timeout)
    from openai._response import AsyncResponseContextManager
    from openai.types.chat import ChatCompletion

    return AsyncResponseContextManager(client.post(
        "/chat/completions", cast_to=ChatCompletion, content=encode_body(params),
        options=_request_options(timeout)))
