"""What a `POST /v1/responses` body may hold: every field is taken, ignored because it does not
change what the team answers (named in docs/responses.md), or refused with a 400 naming it.
Pure: no Temporal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_teams.gateway import requests as checks
from durable_teams.gateway.chat_history import FieldError

TAKEN = {"model", "input", "previous_response_id", "stream", "background", "max_output_tokens",
         "store", "tools", "tool_choice", "text", "instructions", "metadata", "stream_options"}
IGNORED = {"temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier",
           "prompt_cache_key", "prompt_cache_retention", "service_tier", "reasoning", "include",
           "truncation"}
"""Sampling and caching hints: a team's agents use their own model settings."""
REFUSED = {
    "conversation": "the Conversations API is not served: continue with previous_response_id",
    "prompt": "prompt templates are not served: a team's prompts are its agents' instructions",
    "top_logprobs": "log probabilities are not available from a team",
    "max_tool_calls": "a team's tool calls are bounded by its own budgets (Supervisor(max_tool_calls=...))",
}


@dataclass
class Input:
    """What a request sends the team: text (a new turn, or the answer to a question), or an
    approval decision (`mcp_approval_response`)."""

    text: str | None = None
    approval_id: str | None = None
    approve: bool | None = None
    reason: str = ""


def check(body: dict[str, Any]) -> None:
    """Refuses (FieldError, naming the field) what a team cannot honour."""
    for name, value in body.items():
        if value is None:
            continue
        if name in REFUSED:
            raise FieldError(f"'{name}': {REFUSED[name]}", name)
        if name not in TAKEN | IGNORED:
            raise FieldError(f"'{name}' is not a field this gateway serves", name)
    for name in ("stream", "background", "store", "parallel_tool_calls"):
        if body.get(name) not in (None, True, False):
            raise FieldError(f"'{name}' must be true or false", name)
    if body.get("store") is False:
        raise FieldError("'store': a team's responses are its thread's durable log; they are "
                         "always stored", "store")
    if body.get("instructions") not in (None, ""):
        raise FieldError("'instructions': a team's instructions are its agents', set on the team", "instructions")
    if body.get("metadata") not in (None, {}):
        raise FieldError("'metadata' is not kept with a team's responses", "metadata")
    text = body.get("text")
    if text is not None and (not isinstance(text, dict) or text.get("format") not in (None, {"type": "text"})):
        raise FieldError("'text': a team answers in text; structured output is set on the team", "text")
    if body.get("tool_choice") not in (None, "auto", "none"):
        raise FieldError("'tool_choice': tools from the client are not supported", "tool_choice")
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(
            isinstance(t, dict) and t.get("type") == "mcp" and t.get("server_label") == body.get("model")
            for t in tools)):
        raise FieldError("'tools': a team's agents use their own tools; only an 'mcp' tool whose "
                         "server_label is the team (to answer its approvals) may be declared", "tools")
    value = body.get("max_output_tokens")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1_000_000):
        raise FieldError("'max_output_tokens' must be an integer from 1 to 1000000", "max_output_tokens")
    if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
        raise FieldError("'stream_options' must be an object", "stream_options")


def parse_input(value: Any) -> Input:
    """The request's `input`: a string, or items: user messages (their text joined) or one
    `mcp_approval_response`."""
    if isinstance(value, str):
        return Input(text=_text(value))
    if not isinstance(value, list) or not value:
        raise FieldError("'input' must be a string or a non-empty list of items", "input")
    texts: list[str] = []
    approval: Input | None = None
    for item in value:
        if not isinstance(item, dict):
            raise FieldError("'input' items must be objects", "input")
        kind = item.get("type", "message")
        if kind == "mcp_approval_response":
            approve = item.get("approve")
            rid = item.get("approval_request_id")
            if approval is not None or not isinstance(rid, str) or not isinstance(approve, bool):
                raise FieldError("'input': one mcp_approval_response with 'approval_request_id' "
                                 "and 'approve' (true or false)", "input")
            reason = item.get("reason") or ""
            if not isinstance(reason, str):
                raise FieldError("'input': an mcp_approval_response's 'reason' must be a string", "input")
            approval = Input(approval_id=rid, approve=approve, reason=_text(reason, blank=True))
        elif kind == "message" and item.get("role") in ("user", None):
            texts.append(_message_text(item.get("content")))
        else:
            raise FieldError(f"'input': items of type {kind!r} (role {item.get('role')!r}) are not "
                             "taken: send the user's message, or an mcp_approval_response; the "
                             "thread remembers the rest (previous_response_id)", "input")
    if approval is not None and texts:
        raise FieldError("'input': an mcp_approval_response goes alone, without a message", "input")
    return approval or Input(text=_text("\n\n".join(texts)))


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "input_text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "\n".join(p["text"] for p in content)
    raise FieldError("'input': a message's content must be text (a string or input_text parts)", "input")


def _text(value: str, blank: bool = False) -> str:
    checks.encodable(value, "input")
    if not blank and not value.strip():
        raise FieldError("'input' must hold some text", "input")
    if len(value.encode("utf-8")) > checks.MAX_TURN_BYTES:
        raise checks.BadRequest(f"'input' is over {checks.MAX_TURN_BYTES:,} bytes", status=413)
    return value
