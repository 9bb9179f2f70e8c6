"""The `call_model` activity: one Chat Completions call for one agent.

Its input is a *reference* to the transcript (`ModelRequest`): the activity reads the agent's
view from the running workflow with a query, so the transcript never enters the workflow
history as activity input. Each message is recorded once, and history grows linearly with the
conversation instead of quadratically.

Each worker keeps the part of each conversation's log it has read already (`ViewCache`), and
asks the workflow only for what it lacks (`model_view_delta`), so a model call costs the
workflow O(new messages) instead of O(transcript). The cache is only an optimisation: a miss
(another worker served the last call, a restart, an eviction, a new run after continue-as-new)
reads from the start.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai
from temporalio import activity
from temporalio.client import WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError

from activities.model_errors import raise_for_openai_error
from workflows import live_view
from workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelView,
    ToolCall,
    ToolSpec,
    Usage,
)
from workflows.transcript import LogDelta, view_from_delta

MAX_REPLY_BYTES = 1024 * 1024
"""A reply larger than this is refused: it would bloat the history of every later turn."""


class ModelBackend(Protocol):
    """Something that answers one model call: OpenAI-compatible HTTP, or a script."""

    async def complete(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        """`messages` are Chat Completions dicts (system message first); `tools` are Chat
        Completions tool dicts (empty when the agent has none)."""
        ...


ViewReader = Callable[[ModelRequest], Awaitable[ModelView]]


async def query_view(req: ModelRequest) -> ModelView:
    """Read the agent's view from the workflow (a query: adds nothing to history).

    The workflow's `model_view(agent, view_id, upto)` query also needs the agent's name, to
    return that agent's tools.
    """
    handle = activity.client().get_workflow_handle(req.workflow_id, run_id=req.run_id)
    return await handle.query(
        "model_view", args=[req.agent, req.view_id, req.transcript_length], result_type=ModelView
    )


DeltaReader = Callable[[ModelRequest, int, int, bool], Awaitable[LogDelta]]
"""`(req, log_start, shared_start, with_tools) -> LogDelta`: the workflow's `model_view_delta`."""


async def query_delta(req: ModelRequest, log_start: int, shared_start: int, with_tools: bool) -> LogDelta:
    """What this worker lacks of the conversation's log (a query: adds nothing to history)."""
    handle = activity.client().get_workflow_handle(req.workflow_id, run_id=req.run_id)
    return await handle.query(
        "model_view_delta",
        args=[req.agent, req.view_id, req.transcript_length, log_start, shared_start, with_tools],
        result_type=LogDelta,
    )


def _approx_bytes(message: Message) -> int:
    """A rough size of a cached message in memory (strings plus object overhead)."""
    size = 600 + len(message.content or "")
    for c in message.tool_calls:
        size += 300 + len(c.arguments) + len(c.name) + len(c.id)
    return size


@dataclass(eq=False)
class _Entry:
    log: list[Message] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    tools: dict[str, list[ToolSpec]] = field(default_factory=dict)
    size: int = 0


class ViewCache:
    """Per-worker cache of the conversation logs `call_model` has read, keyed by (workflow id,
    run id), least recently used first out.

    Exact, not approximate: the workflow's log and shared list only grow at the end within a
    run, so a prefix read once stays true; the view is rebuilt with the workflow's own pure code
    (`workflows.transcript`) as of `transcript_length`, so a retry sees the same view. Several
    calls of one conversation may read at once (parallel workers): each merges only what extends
    the prefix. A workflow without `model_view_delta` (an older worker deployment) is read with
    `model_view`.
    """

    def __init__(
        self,
        max_bytes: int = 64 * 1024 * 1024,
        max_conversations: int = 2000,
        delta_reader: DeltaReader = query_delta,
        full_reader: ViewReader = query_view,
        live: bool = True,
    ) -> None:
        """`live=False` always queries, as on a worker that does not hold the workflow (the
        benchmark measures both)."""
        self.max_bytes = max_bytes
        self.max_conversations = max_conversations
        self.delta_reader = delta_reader
        self.full_reader = full_reader
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.use_live_view = live
        self.live = 0
        """Views read from a workflow instance in this process (workflows/live_view.py)."""

    def __len__(self) -> int:
        return len(self._entries)

    async def read(self, req: ModelRequest) -> ModelView:
        live = live_view.read(req) if self.use_live_view else None  # cached here: no query
        if live is not None:
            self.live += 1
            return live
        key = (req.workflow_id, req.run_id)
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            entry = _Entry()
        else:
            self.hits += 1
        log_start, shared_start = len(entry.log), len(entry.shared)
        try:
            delta = await self.delta_reader(req, log_start, shared_start, req.agent not in entry.tools)
        except WorkflowQueryFailedError as err:
            if "model_view_delta" not in str(err):
                raise
            return await self.full_reader(req)
        if delta.log_start != log_start or delta.shared_start != shared_start:
            self._drop(key)  # the workflow no longer has what we hold: start again from 0
            entry = _Entry(tools=entry.tools)  # same run, same team: tool schemas still hold
        had = len(entry.log)
        messages = view_from_delta(entry.log, entry.shared, delta, req.view_id, req.transcript_length)
        if delta.tools is not None:
            entry.tools[req.agent] = delta.tools
        tools = entry.tools.get(req.agent)
        if tools is None:  # not asked for, yet gone (a concurrent reset): read in full
            return await self.full_reader(req)
        added = sum(_approx_bytes(m) for m in entry.log[had:])
        entry.size += added
        current = self._entries.get(key)
        if current is entry:
            self.bytes += added
            self._entries.move_to_end(key)
        elif current is None:
            self._entries[key] = entry
            self.bytes += entry.size
        self._evict()
        return ModelView(messages=messages, tools=tools)

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def _evict(self) -> None:
        while self._entries and (
            self.bytes > self.max_bytes or len(self._entries) > self.max_conversations
        ):
            _, entry = self._entries.popitem(last=False)
            self.bytes -= entry.size


def is_live_model_configured() -> bool:
    """True when the worker has an OpenAI-compatible endpoint configured in its environment."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


def backend_from_env(
    scripted_fallback: ModelBackend | Callable[[], ModelBackend],
) -> ModelBackend:
    """The live backend when the environment configures one, otherwise the fallback (a backend,
    or a factory called only when needed)."""
    if is_live_model_configured():
        return OpenAIBackend()
    return scripted_fallback() if callable(scripted_fallback) else scripted_fallback


class OpenAIBackend:
    """Any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio).

    Configured on the worker (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, or the constructor's
    arguments), so the key never travels through workflow history. With only a base URL, the
    key is "not-needed" (local servers ignore it). The client does not retry
    (`max_retries=0`): Temporal owns retries.
    """

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, timeout: float = 120.0
    ) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if base_url is None:
                raise ValueError(
                    "No model endpoint configured: set OPENAI_API_KEY (OpenAI) or "
                    "OPENAI_BASE_URL (a local OpenAI-compatible server) on the worker."
                )
            api_key = "not-needed"
        self.base_url = base_url
        self.client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout
        )

    def params(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The `chat.completions.create` arguments: optional ones only when they apply."""
        params: dict[str, Any] = {"model": req.model, "messages": messages}
        if tools:
            params["tools"] = tools
            if req.parallel_tool_calls is not None:
                params["parallel_tool_calls"] = req.parallel_tool_calls
        if req.temperature is not None:
            params["temperature"] = req.temperature
        if req.output_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": req.output_schema, "strict": False},
            }
        return params

    async def complete(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        try:
            completion = await self.client.chat.completions.create(
                **self.params(req, messages, tools)
            )
        except openai.OpenAIError as err:
            raise_for_openai_error(err, req.model)
        return to_model_response(completion, req.model)


def to_model_response(completion: Any, model: str = "") -> ModelResponse:
    """A ChatCompletion as our wire type. Tool-call arguments pass through unchanged, even
    malformed JSON: the tool runner tells the model, which can then correct itself."""
    choices = getattr(completion, "choices", None) or []
    if not choices or getattr(choices[0], "message", None) is None:
        raise ApplicationError(
            f"The model endpoint returned a completion with no choices (model {model!r}), so "
            "there is no reply to use. The server may have filtered the output.",
            type="ModelBadResponse",
            non_retryable=True,
        )
    choice = choices[0]
    reply = choice.message
    calls = [
        ToolCall(id=c.id or "", name=c.function.name, arguments=c.function.arguments or "")
        for c in (reply.tool_calls or [])
        if getattr(c, "function", None) is not None
    ]
    content = reply.content if reply.content is not None else getattr(reply, "refusal", None)
    usage = getattr(completion, "usage", None)
    return ModelResponse(
        message=Message(role="assistant", content=content, tool_calls=calls),
        finish_reason=choice.finish_reason,
        usage=Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        ),
    )


class ModelActivities:
    """The `call_model` activity, bound to a backend and a way to read the agent's view."""

    def __init__(self, backend: ModelBackend, view_reader: ViewReader | None = None) -> None:
        """`view_reader` defaults to a fresh per-worker `ViewCache`."""
        self.backend = backend
        self.view_cache: ViewCache | None = None
        if view_reader is None:
            self.view_cache = ViewCache()
            view_reader = self.view_cache.read
        self.view_reader = view_reader

    @activity.defn(name="call_model")
    async def call_model(self, req: ModelRequest) -> ModelResponse:
        """Call the model for one agent on its view of the transcript."""
        view = await self.view_reader(req)
        messages = [{"role": "system", "content": req.instructions}] if req.instructions else []
        messages += [m.to_openai() for m in view.messages]
        tools = [t.to_openai() for t in view.tools]
        response = await self.backend.complete(req, messages, tools)
        calls = [
            c if c.id else c.model_copy(update={"id": f"call_{req.transcript_length}_{i}"})
            for i, c in enumerate(response.message.tool_calls)
        ]
        message = Message(
            role="assistant", content=response.message.content, name=req.agent, tool_calls=calls
        )
        size = len(message.model_dump_json().encode())
        if size > MAX_REPLY_BYTES:
            raise ApplicationError(
                f"The model's reply for {req.agent} is {size:,} bytes, over the "
                f"{MAX_REPLY_BYTES:,}-byte limit.",
                type="ModelReplyTooLarge",
                non_retryable=True,
            )
        return response.model_copy(update={"message": message})
