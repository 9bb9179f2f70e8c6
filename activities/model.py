"""The `call_model` activity: one Chat Completions call for one agent.

Its input is a *reference* to the transcript (`ModelRequest`): the activity reads the agent's
view from the running workflow (activities/views.py), so the transcript never enters the
workflow history as activity input. Each message is recorded once, and history grows linearly
with the conversation instead of quadratically.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

import openai
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)

from .model_errors import raise_for_openai_error
from .views import ViewCache, ViewReader

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
