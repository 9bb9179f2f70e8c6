"""The OpenAI Responses API (`/v1/responses`), for models served only there (`api="responses"`).

Our transcript stays in Chat Completions shapes; these pure functions translate one call:
`responses_input` turns an agent's view into Responses input items (user, assistant and system
messages, `function_call` and `function_call_output` items, the reasoning items a reply
carried), `responses_tools` the tool schemas into function tools, `parse_response` a Response
object back into our `ModelResponse`, and `read_responses_stream` a streamed one (text deltas
to live subscribers as they come, the `response.completed` event's object parsed as usual).

Reasoning: calls are made with `store=False` and `include=["reasoning.encrypted_content"]`, so
nothing of the conversation is kept by the provider (the transcript lives in workflow history)
and a reasoning model's reasoning items come back encrypted. They are kept on the assistant
message (`Message.reasoning`, never shown to people or sent to Chat Completions) and passed
back, in order, with the same agent's later calls, so a reasoning model continues its
chain of thought across tool calls. Pure: no HTTP, no Temporal.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from durable_teams.workflows.tool_calls import sendable

from .model_parse import BadModelResponse, error_in_body, quote_text

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def responses_input(messages: list[Message], agent: str | None = None) -> list[dict[str, Any]]:
    """An agent's view as Responses input items (the system prompt goes in `instructions`).
    Reasoning items go back only with `agent`'s own replies: another agent's (another model's,
    perhaps) reasoning is not this model's to continue."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "",
                          "output": m.content or ""})
            continue
        if m.role == "assistant":
            items += [dict(r) for r in m.reasoning or [] if m.name == agent]
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                      for c in m.tool_calls]
            continue
        items.append({"role": m.role, "content": m.content or ""})
    return items


def responses_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tool schemas as Responses function tools (flat: no `function` wrapper)."""
    return [{"type": "function", "name": t.name, "description": t.description,
             "parameters": t.parameters, "strict": False} for t in tools]


def responses_params(req: ModelRequest, messages: list[Message], tools: list[ToolSpec],
                     stream: bool) -> dict[str, Any]:
    """The `responses.create` arguments: optional ones only when they apply."""
    params: dict[str, Any] = {"model": req.model, "input": responses_input(messages, req.agent),
                              "store": False,
                              "include": ["reasoning.encrypted_content"]}
    if req.instructions:
        params["instructions"] = req.instructions
    if tools:
        params["tools"] = responses_tools(tools)
        if req.parallel_tool_calls is not None:
            params["parallel_tool_calls"] = req.parallel_tool_calls
    if stream:
        params["stream"] = True
    if req.temperature is not None:
        params["temperature"] = req.temperature
    if req.max_tokens is not None:
        params["max_output_tokens"] = req.max_tokens
    if req.output_schema is not None:
        params["text"] = {"format": {"type": "json_schema", "name": "output",
                                     "schema": req.output_schema, "strict": False}}
    return params


def _text_of(item: dict[str, Any]) -> str:
    parts = item.get("content")
    if isinstance(parts, str):
        return parts
    out = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict):
            text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
            out.append(text if isinstance(text, str) else "")
    return "".join(out)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def parse_response(data: dict[str, Any], model: str, secrets: list[str] | None = None) -> ModelResponse:
    """A Response object as our wire type, or `BadModelResponse` (a failed response, an
    error object, or one with no output)."""
    secrets = secrets or []
    error = error_in_body(data, secrets)
    if error is not None:
        raise error
    output = data.get("output")
    if not isinstance(output, list):
        raise BadModelResponse("ModelBadResponse", f"The model endpoint returned a response without "
                               f"an output list (model {model!r}). Server said: {quote_text(json.dumps(data), secrets)}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts.append(_text_of(item))
        elif kind == "function_call":
            arguments = item.get("arguments")
            calls.append(ToolCall(id=sendable(str(item.get("call_id") or item.get("id") or "")),
                                  name=sendable(str(item.get("name") or "")),
                                  arguments=sendable(arguments if isinstance(arguments, str) else json.dumps(arguments or {}))))
        elif kind == "reasoning":
            reasoning.append({k: v for k, v in item.items() if v is not None and k != "status"})
    text = sendable("".join(texts)) if texts else None
    usage = _dict(data.get("usage"))
    details = _dict(data.get("incomplete_details"))
    finish = (_INCOMPLETE.get(str(details.get("reason")), "length") if data.get("status") == "incomplete"
              else "tool_calls" if calls else "stop")
    message = Message(role="assistant", content=text or None, tool_calls=calls, reasoning=reasoning or None)
    return ModelResponse(message=message, finish_reason=finish,
                         usage=Usage(prompt_tokens=_count(usage.get("input_tokens")),
                                     completion_tokens=_count(usage.get("output_tokens"))))


_FINAL = ("response.completed", "response.incomplete", "response.failed")


async def read_responses_stream(lines: AsyncIterator[str], emit: Callable[[str], None],
                                max_bytes: int) -> dict[str, Any]:
    """Read a streamed Response's server-sent events, emitting `response.output_text.delta`s;
    the final Response object (from `response.completed`, `.incomplete` or `.failed`), or the
    body of an `error` event. A stream that ends before either is cut off (tried once more)."""
    size = 0
    async for line in lines:
        size += len(line)
        if size > max_bytes:
            raise BadModelResponse("ModelResponseTooLarge", f"The streamed response passed the {max_bytes:,}-byte limit.")
        if not line.startswith("data:"):
            continue  # `event:` names repeat the data's type; comments, keep-alives
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise BadModelResponse("BadModelResponse", f"A streamed event is not JSON: {data[:200]!r}",
                                   retry="once") from None
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.output_text.delta":
            emit(str(event.get("delta") or ""))
        elif kind in _FINAL and isinstance(event.get("response"), dict):
            return event["response"]  # type: ignore[no-any-return]
        elif kind == "error":
            return {"error": {k: v for k, v in event.items() if k != "type"}}
    raise BadModelResponse("ModelBadResponse", "The model endpoint's response stream ended before "
                           "the response was complete.", retry="once")
