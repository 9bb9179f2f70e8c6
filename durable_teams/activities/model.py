"""The `call_model` activity: one Chat Completions call for one agent.

Its input is a *reference* to the transcript (`ModelRequest`): the activity reads the agent's
view from the running workflow (activities/view_cache.py), so the transcript never enters the
workflow history as activity input. Each message is recorded once, and history grows linearly
with the conversation instead of quadratically.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, Protocol

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.encryption.redact import mask_url, scrub_client_logs
from durable_teams.live import hub as live
from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolSpec,
)

from .call_facts import note, note_response, server_facts
from .heartbeats import heartbeating
from .model_embeddings import openai_embed
from .model_errors import (
    raise_bad_response,
    raise_for_openai_error,
    raise_for_read_error,
    raise_timeout,
)
from .model_errors import refuse_empty as refuse_empty
from .model_http import HTTP_CLIENT_ENV as HTTP_CLIENT_ENV
from .model_http import ModelSettingError as ModelSettingError
from .model_http import attempt_timeout, current_attempt, pooled_http_client
from .model_http import http_client_setting as http_client_setting
from .model_parse import BadModelResponse, decode_body, parse_completion
from .model_responses import parse_response, read_responses_stream, responses_params
from .model_stream import read_stream
from .model_toolless import ToollessModels, tools_refusal
from .view_cache import ViewCache, ViewReader
from .wire import WireCache, message_dict, stream_chat_completion

MAX_REPLY_BYTES = 1024 * 1024
"""A reply larger than this is refused: it would bloat the history of every later turn."""

MAX_BODY_BYTES = 8 * 1024 * 1024
"""A response body larger than this is not read at all (a runaway or hostile server)."""


class ModelBackend(Protocol):
    """Something that answers one model call: an OpenAI-compatible endpoint, a script, or any
    provider. It takes the project's own types; each backend owns its wire format and maps its
    own errors to `ApplicationError`s (retryable or not, with a type and a readable message)."""

    async def complete(
        self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        """Answer `req`: `messages` are the agent's view of the conversation (the system prompt
        is `req.instructions`, not among them), `tools` the tools it may call."""
        ...


def chat_messages(instructions: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The Chat Completions `messages`: the system prompt (if any), then the view's."""
    out = [{"role": "system", "content": instructions}] if instructions else []
    return out + [message_dict(m) for m in messages]


def is_live_model_configured() -> bool:
    """True when the worker has an OpenAI-compatible endpoint configured in its environment."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


class OpenAIBackend:
    """Any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio).

    Configured on the worker (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, or the constructor's
    arguments), so the key never travels through workflow history. With only a base URL, the
    key is "not-needed" (local servers ignore it). The client does not retry
    (`max_retries=0`): Temporal owns retries. Inside an activity, a request is cut a little
    before the attempt's own deadline, so a hung endpoint ends as a readable `ModelTimeout`.
    The body is read by this class (at most `max_body_bytes`) and parsed leniently
    (activities/model_parse.py): the openai client's own parsing turns a body it cannot read
    into a string or a bare JSON error that would be retried like a network failure.
    """

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, timeout: float = 120.0,
        max_body_bytes: int = MAX_BODY_BYTES, stream: bool | None = None,
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
        scrub_client_logs()
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes
        # stream=True: text deltas reach live subscribers while the model writes (durable_teams/live/hub.py)
        self.stream = os.environ.get("DURABLE_TEAMS_MODEL_STREAM") == "1" if stream is None else stream
        self.secrets = [api_key] if len(api_key) >= 4 else []
        # openai is imported here, where an OpenAI-backed model is built, not with this module:
        # a scripted worker and the CLI's commands never load it (a second of CPU per process)
        import openai

        self.client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout,
            http_client=pooled_http_client(base_url),
        )
        self.wire = WireCache()
        """Each message's Chat Completions dict and JSON, made once (activities/wire.py)."""
        self.toolless = ToollessModels()
        """Models seen refusing tools: called as plain chat (activities/model_toolless.py)."""

    def params(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The `chat.completions.create` arguments: optional ones only when they apply."""
        params: dict[str, Any] = {"model": req.model, "messages": messages}
        if tools:
            params["tools"] = tools
            if req.parallel_tool_calls is not None:
                params["parallel_tool_calls"] = req.parallel_tool_calls
        if self.stream:  # usage comes in a last chunk only when asked for (OpenAI's rule)
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        if req.temperature is not None:
            params["temperature"] = req.temperature
        if req.max_tokens is not None:
            params["max_tokens"] = req.max_tokens
        if req.output_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": req.output_schema, "strict": False},
            }
        return params

    async def aclose(self) -> None:
        """Close the client's pooled connections (a worker's backend lives as long as its
        process; a program that ends sooner closes it, so nothing is left unclosed)."""
        await self.client.close()

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` (`/v1/embeddings`; activities/model_embeddings.py)."""
        return await openai_embed(self.client, model, texts, attempt_timeout(self.timeout))

    def where(self, api: str | None = None) -> str:
        path = "/responses" if api == "responses" else "/chat/completions"
        return mask_url(str(self.client.base_url).rstrip("/") + path)

    async def complete(
        self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        """One call; without tools for a model that refuses them (activities/model_toolless.py)."""
        return await self.toolless.complete(req.model, tools, lambda offered: self._call(req, messages, offered))

    async def _call(
        self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        from openai import OpenAIError  # loaded already, by __init__

        if req.api == "responses":  # activities/model_responses.py
            params = responses_params(req, messages, tools, self.stream)
            send: Callable[[dict[str, Any], float], Any] = self._send_responses
            read_events, parse = read_responses_stream, parse_response
        else:
            stream = (req.workflow_id, req.run_id, req.agent_run)  # each call extends the last view
            params = self.params(req, self.wire.messages(req.instructions, messages, stream),
                                 self.wire.tools(tools, (req.workflow_id, req.run_id, req.agent)))
            send, read_events, parse = self._send, read_stream, parse_completion
        where = self.where(req.api)
        timeout = attempt_timeout(self.timeout)
        # for tracing (activities/call_facts.py): the openai client's own instrumentation
        # never sees this call, which goes through its low-level `post` (activities/wire.py)
        note(**{"gen_ai.provider.name": "openai", **server_facts(str(self.client.base_url))})
        try:
            async with asyncio.timeout(timeout):  # the read timeout is per chunk: bound it all
                async with send(params, timeout) as resp:
                    content_type = resp.headers.get("content-type", "")
                    # a stream is read only when asked for: unasked, it is a bad response
                    if self.stream and content_type.startswith("text/event-stream"):
                        data = await read_events(resp.iter_lines(), live.emit, self.max_body_bytes)
                        note_response(data)
                        return parse(data, req.model, self.secrets)
                    raw = await self._read(resp)
        except BadModelResponse as err:  # a streamed body that does not add up
            raise_bad_response(err, current_attempt())
        except OpenAIError as err:
            refused = tools_refusal(err) if tools else None
            if refused is not None:
                raise refused from None
            raise_for_openai_error(err, req.model, timeout)
        except TimeoutError:
            raise_timeout(where, timeout)
        except Exception as err:
            raise_for_read_error(err, where)
            raise
        try:
            data = decode_body(raw, content_type, self.secrets)
            note_response(data)
            return parse(data, req.model, self.secrets)
        except BadModelResponse as err:
            raise_bad_response(err, current_attempt())

    def _send_responses(self, params: dict[str, Any], timeout: float) -> Any:
        """A Responses API request, as a context manager over the unread response."""
        return self.client.responses.with_streaming_response.create(**params, timeout=timeout)

    def _send(self, params: dict[str, Any], timeout: float) -> Any:
        """The request, as a context manager over the unread response (errors raise here)."""
        return stream_chat_completion(self.client, params, timeout)

    async def _read(self, resp: Any) -> bytes:
        """The body, refused beyond `max_body_bytes` before it is all in memory."""
        declared = resp.headers.get("content-length") or ""
        chunks: list[bytes] = []
        size = int(declared) if declared.isdigit() else 0
        if size <= self.max_body_bytes:
            size = 0
            async for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > self.max_body_bytes:
                    break
                chunks.append(chunk)
        if size > self.max_body_bytes:
            raise ApplicationError(
                f"The model endpoint at {self.where()} sent a response over the "
                f"{self.max_body_bytes:,}-byte limit; it was not read.",
                type="ModelResponseTooLarge", non_retryable=True)
        return b"".join(chunks)


class ModelActivities:
    """The `call_model` activity, bound to a backend and a way to read the agent's view."""

    def __init__(self, backend: ModelBackend, view_reader: ViewReader | None = None,
                 hub: live.LiveHub = live.LIVE) -> None:
        """`view_reader` defaults to a fresh per-worker `ViewCache`; `hub` is where text
        deltas of streamed calls go (this process's by default)."""
        self.backend = backend
        self.hub = hub
        self.view_cache: ViewCache | None = None
        if view_reader is None:
            self.view_cache = ViewCache()
            view_reader = self.view_cache.read
        self.view_reader = view_reader

    @activity.defn(name="call_model")
    async def call_model(self, req: ModelRequest) -> ModelResponse:
        """Call the model for one agent on its view of the transcript."""
        view = await self.view_reader(req)
        # deltas a streaming backend emits go to live subscribers (durable_teams/live/hub.py)
        workflow_id = (activity.info().workflow_id or "") if activity.in_activity() else ""
        async with live.streaming(workflow_id, req.agent, f"{req.agent}:{req.agent_call_index}",
                                  current_attempt(), self.hub, position=req.transcript_length,
                                  shared=req.agent_run == 0):
            # a regular call heartbeats: how it hears of a cancel, which closes its connection
            response = await heartbeating(self.backend.complete(req, view.messages, view.tools))
        refuse_empty(response, req, current_attempt())
        calls = [
            c if c.id else c.model_copy(update={"id": f"call_{req.transcript_length}_{i}"})
            for i, c in enumerate(response.message.tool_calls)
        ]
        message = Message(role="assistant", content=response.message.content, name=req.agent,
                          tool_calls=calls, reasoning=response.message.reasoning)
        size = len(message.model_dump_json().encode())
        if size > MAX_REPLY_BYTES:
            raise ApplicationError(
                f"The model's reply for {req.agent} is {size:,} bytes, over the "
                f"{MAX_REPLY_BYTES:,}-byte limit.",
                type="ModelReplyTooLarge",
                non_retryable=True,
            )
        return response.model_copy(update={"message": message, "read_in_process": view.in_process})
