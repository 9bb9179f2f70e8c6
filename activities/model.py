"""The `call_model` activity: one Chat Completions call for one agent.

Its input is a *reference* to the transcript (`ModelRequest`): the activity reads the agent's
view from the running workflow with the `model_view` query, so the transcript never enters the
workflow history as activity input. Each message is recorded once, and history grows linearly
with the conversation instead of quadratically.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import openai
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.model_errors import raise_for_openai_error
from workflows.messages import Message, ModelRequest, ModelResponse, ModelView, ToolCall, Usage

MAX_REPLY_BYTES = 1024 * 1024


class ModelBackend(Protocol):
    async def complete(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse: ...


ViewReader = Callable[[ModelRequest], Awaitable[ModelView]]


async def query_view(req: ModelRequest) -> ModelView:
    """Read the agent's view from the workflow (a query: adds nothing to history)."""
    handle = activity.client().get_workflow_handle(req.workflow_id, run_id=req.run_id)
    return await handle.query(
        "model_view", args=[req.agent, req.view_id, req.transcript_length], result_type=ModelView
    )


def is_live_model_configured() -> bool:
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


class OpenAIBackend:
    """Any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio). The key is read on
    the worker and never travels through workflow history."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, timeout: float = 120.0):
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or ("not-needed" if base_url else None)
        # max_retries=0: Temporal owns retries, so every attempt is visible in the history.
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)

    async def complete(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
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
        try:
            completion = await self.client.chat.completions.create(**params)
        except openai.OpenAIError as err:
            raise_for_openai_error(err, req.model)
        if not completion.choices:
            raise ApplicationError("The model endpoint returned no choices.", type="ModelBadResponse",
                                   non_retryable=True)
        choice = completion.choices[0]
        calls = [
            ToolCall(id=c.id or "", name=c.function.name, arguments=c.function.arguments or "")
            for c in (choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = completion.usage
        return ModelResponse(
            message=Message(role="assistant", content=choice.message.content or "", tool_calls=calls),
            finish_reason=choice.finish_reason,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
        )


class ModelActivities:
    def __init__(self, backend: ModelBackend, view_reader: ViewReader = query_view):
        self.backend = backend
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
        message = response.message.model_copy(
            update={"role": "assistant", "name": req.agent, "tool_calls": calls}
        )
        size = len(message.model_dump_json().encode())
        if size > MAX_REPLY_BYTES:
            raise ApplicationError(
                f"The model's reply is {size:,} bytes, over the {MAX_REPLY_BYTES:,}-byte limit.",
                type="ModelReplyTooLarge", non_retryable=True)
        return response.model_copy(update={"message": message})
