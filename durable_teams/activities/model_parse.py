"""Reading a Chat Completions response body the way real OpenAI-compatible servers send it.

Lenient where servers legitimately differ (content as a list of text parts, tool-call
`arguments` as a JSON object, missing optional fields, a legacy `function_call`, finish reasons
spelled differently); strict where there is no answer to use (not JSON, truncated, no choices,
no message, an `error` object); text no payload can encode (a lone surrogate) is repaired.
Pure: no Temporal, no HTTP. A body that cannot be used raises
`BadModelResponse`, which says what was wrong and quotes the server's own text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from durable_teams.encryption.redact import scrub
from durable_teams.workflows.messages import Message, ModelResponse, ToolCall, Usage
from durable_teams.workflows.tool_calls import sendable

QUOTE_CHARS = 300
"""Characters of the server's text quoted in a message (an HTML page can be megabytes)."""

_TAG = re.compile(r"<[^>]*>")

Retry = Literal["never", "once", "status"]

_FINISH_ALIASES = {
    "max_tokens": "length", "model_length": "length", "max_output_tokens": "length",
    "content-filter": "content_filter", "safety": "content_filter", "end_turn": "stop",
    "eos": "stop", "eos_token": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
    "function_call": "tool_calls",
}


class BadModelResponse(Exception):
    """A response with no usable answer. `retry`: "never", "once" (a cut-off body may be a
    glitch), or "status" (an error object whose `code` is an HTTP status: retried like one)."""

    def __init__(self, kind: str, message: str, retry: Retry = "never", status: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry = retry
        self.status = status


def quote_text(text: str, secrets: list[str] | None = None) -> str:
    """The first QUOTE_CHARS characters of `text`, secrets scrubbed, on one line; an HTML page
    as its text, without tags."""
    text = sendable(scrub(text, secrets or []))
    if text.lstrip()[:1] == "<":
        text = _TAG.sub(" ", text)
    short = " ".join(text.split())
    return short[:QUOTE_CHARS] + ("..." if len(short) > QUOTE_CHARS else "")


def decode_body(raw: bytes, content_type: str, secrets: list[str]) -> dict[str, Any]:
    """The JSON object in `raw`. A body that parses is used whatever its content type (the
    openai client does the same); anything else fails with the server's text quoted."""
    text = raw.decode("utf-8", errors="replace")
    kind = content_type.split(";")[0].strip() or "no content type"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        said = quote_text(text, secrets) or "(an empty body)"
        if not text.strip():
            raise BadModelResponse("ModelBadResponse", "The model endpoint answered HTTP 200 "
                                   f"with an empty body ({kind}).", retry="once") from None
        if "json" in kind and text.lstrip()[:1] in "{[":  # cut off mid-way: maybe a glitch
            raise BadModelResponse("ModelBadResponse", "The model endpoint sent truncated or "
                                   f"invalid JSON ({err.msg}, character {err.pos}). Server "
                                   f"said: {said}", retry="once") from None
        raise BadModelResponse("ModelBadResponse", "The model endpoint sent a response that is "
                               f"not JSON ({kind}). Server said: {said}") from None
    except RecursionError:  # JSON nested deeper than the parser's stack
        raise BadModelResponse("ModelBadResponse", "The model endpoint sent JSON nested too "
                               f"deeply to read. Server said: {quote_text(text, secrets)}") from None
    if not isinstance(data, dict):
        raise BadModelResponse("ModelBadResponse", "The model endpoint sent JSON that is not a "
                               f"Chat Completion object. Server said: {quote_text(text, secrets)}")
    return data


def error_in_body(data: dict[str, Any], secrets: list[str]) -> BadModelResponse | None:
    """An `error` object sent with HTTP 200 (some proxies and routers do), if there is one."""
    error = data.get("error")
    if not error or data.get("choices"):
        return None
    inner = error if isinstance(error, dict) else {"message": error}
    text = quote_text(str(inner.get("message") or json.dumps(inner)), secrets)
    code = inner.get("code") if inner.get("code") is not None else inner.get("status")
    status = int(str(code)) if str(code).isdigit() else 0
    status = status if 400 <= status <= 599 else 0
    where = f" (code {status})" if status else ""
    return BadModelResponse(
        "ModelErrorResponse", f"The model endpoint answered HTTP 200 with an error{where}. "
        f"Server said: {text}", retry="status" if status else "never", status=status)


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text of a list of parts."""
    if content is None or isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None
             for p in parts]
    joined = "".join(t for t in texts if isinstance(t, str))
    return joined if joined or not parts else None


def _arguments(value: Any) -> str:
    """Tool-call arguments as the JSON string the tool runner parses; a string passes through
    unchanged, even malformed, so the model can be told and correct itself."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    raw = message.get("tool_calls") or []
    if not raw and isinstance(message.get("function_call"), dict):
        raw = [{"id": "", "function": message["function_call"]}]  # the legacy single call
    calls = []
    for item in raw if isinstance(raw, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            continue
        calls.append(ToolCall(id=sendable(str(item.get("id") or "")),
                              name=sendable(str(function.get("name") or "")),
                              arguments=sendable(_arguments(function.get("arguments")))))
    return calls


def _finish_reason(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    reason = value.lower()
    return _FINISH_ALIASES.get(reason, reason)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def parse_completion(data: dict[str, Any], model: str, secrets: list[str] | None = None,
                     ) -> ModelResponse:
    """A decoded Chat Completion as our wire type, or `BadModelResponse`."""
    secrets = secrets or []
    error = error_in_body(data, secrets)
    if error is not None:
        raise error
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        said = quote_text(json.dumps(data), secrets)
        missing = "no choices" if not choices else "choices that are not a list"
        raise BadModelResponse("ModelBadResponse", f"The model endpoint returned a completion "
                               f"with {missing} (model {model!r}), so there is no reply to use. "
                               f"Server said: {said}")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BadModelResponse("ModelBadResponse", "The model endpoint returned a choice "
                               f"without a message (model {model!r}). Server said: "
                               f"{quote_text(json.dumps(data), secrets)}")
    content = _text(message.get("content"))
    if content is None and isinstance(message.get("refusal"), str):
        content = message["refusal"]
    # JSON may escape a lone surrogate ("\udc80"), which no payload can encode: replaced as
    # tool results are (sendable), so the reply is used instead of failing every retry
    content = None if content is None else sendable(content)
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return ModelResponse(
        message=Message(role="assistant", content=content, tool_calls=_tool_calls(message)),
        finish_reason=_finish_reason(choice.get("finish_reason")),
        usage=Usage(prompt_tokens=_count(usage.get("prompt_tokens")),
                    completion_tokens=_count(usage.get("completion_tokens"))),
    )
