"""What a `POST /v1/responses` body may hold: every field is taken, ignored because it does not
change what the team answers (named in docs/responses.md), or refused with a 400 naming it.
Pure: no Temporal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.requests import FieldError

TAKEN = {"model", "input", "previous_response_id", "stream", "background", "max_output_tokens",
         "store", "tools", "tool_choice", "text", "instructions", "metadata", "stream_options",
         "background_options", "user", "safety_identifier"}
IGNORED = {"temperature", "top_p", "parallel_tool_calls",
           "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "service_tier",
           "reasoning", "include", "truncation", "client_metadata", "image"}
"""Sampling and caching hints, options for inputs a team does not take (images), and a
client's own labels: a team's agents use their own model settings."""
WINDOWS = ("soonest", "2h", "8h")
"""`background_options.completion_window`: a team's background run starts at once, so it
ends within any of them."""
SYSTEM_ROLES = {"system", "developer"}
SKIPPED_ITEMS = {"reasoning", "mcp_approval_request"}
"""Items of ours a client resends with the conversation: the thread has them."""
REFUSED = {
    "conversation": "the Conversations API is not served: continue with previous_response_id",
    "prompt": "prompt templates are not served: a team's prompts are its agents' instructions",
    "top_logprobs": "log probabilities are not available from a team",
    "max_tool_calls": "a team's tool calls are bounded by its own budgets (Supervisor(max_tool_calls=...))",
    "context_management": "a team's agents manage their own context (compaction is not run for a request)",
    "moderation": "moderation is not run by the gateway: a team's guardrails are its own",
    "access_programs": "access programs are the model provider's: a team's agents call their own models",
}


@dataclass
class Input:
    """What a request sends the team: text (a new turn, or the answer to a question), an
    approval decision (`mcp_approval_response`), or a whole conversation resent (`conversation`:
    chat messages, the newest the user's), as clients that keep no response ids send it."""

    text: str | None = None
    conversation: list[dict[str, str]] | None = None
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
    check_sampling(body)
    instructions = body.get("instructions")  # with previous_response_id: the thread keeps its own
    if instructions is not None and not isinstance(instructions, str):
        raise FieldError("'instructions' must be a string", "instructions")
    if body.get("metadata") not in (None, {}):
        raise FieldError("'metadata' is not kept with a team's responses", "metadata")
    text = body.get("text")
    if text is not None and (not isinstance(text, dict) or text.get("format") not in (None, {"type": "text"})):
        raise FieldError("'text': a team answers in text; structured output is set on the team", "text")
    if body.get("tool_choice") not in (None, "auto", "none"):
        raise FieldError("'tool_choice': a team's agents use their own tools, never the client's: "
                         "only 'auto' or 'none'", "tool_choice")
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise FieldError("'tools' must be a list of objects", "tools")
    value = body.get("max_output_tokens")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1_000_000):
        raise FieldError("'max_output_tokens' must be an integer from 1 to 1000000", "max_output_tokens")
    if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
        raise FieldError("'stream_options' must be an object", "stream_options")
    check_background_options(body)


SAMPLING_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}
"""The ranges OpenAI takes: a team's agents use their own settings, but a value out of range is
the client's mistake, refused as OpenAI refuses it."""


def check_sampling(body: dict[str, Any]) -> None:
    for name, (low, high) in SAMPLING_RANGES.items():
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not low <= value <= high):
            raise FieldError(f"'{name}' must be a number from {low:g} to {high:g}", name)


def check_background_options(body: dict[str, Any]) -> None:
    """`background_options`: `{"completion_window": "soonest" | "2h" | "8h"}`, the longer
    windows with `background: true` and no stream, as the API has it."""
    options = body.get("background_options")
    if options is None:
        return
    if not isinstance(options, dict) or set(options) - {"completion_window"}:
        raise FieldError("'background_options' takes only completion_window", "background_options")
    window = options.get("completion_window", "soonest")
    if window not in WINDOWS:
        raise FieldError(f"'background_options.completion_window' is one of {', '.join(WINDOWS)}",
                         "background_options")
    if window != "soonest" and (body.get("background") is not True or body.get("stream")):
        raise FieldError(f"'background_options': the {window} window needs background: true and no stream",
                         "background_options")


def parse_input(value: Any, instructions: str | None = None, continued: bool = False) -> Input:
    """The request's `input`: a string, or items: user messages (their text joined), one
    `mcp_approval_response`, or (not `continued`) a whole conversation with system, developer
    and assistant messages; `instructions` open it as a system message."""
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise FieldError("'input' must be a string or a non-empty list of items", "input")
    for item in value:
        if not isinstance(item, dict) or not all(isinstance(item.get(k, ""), str) for k in ("type", "role")):
            raise FieldError("'input' items must be objects whose 'type' and 'role' are strings", "input")
    if not continued and (instructions or _is_conversation(value)):
        opening = [{"role": "system", "content": instructions}] if instructions else []
        return Input(conversation=opening + [_chat_message(item) for item in value
                                             if item.get("type", "message") not in SKIPPED_ITEMS])
    texts: list[str] = []
    approval: Input | None = None
    for item in value:
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


def resumed_from(value: Any) -> tuple[str, list[Any]] | None:
    """A conversation resent with an answer of ours in it, as the Agents SDK's
    `result.to_input_list()` holds it (our message items keep their ids): the latest such
    item's id and the items after it (our own reasoning and approval requests left out)."""
    if not isinstance(value, list):
        return None
    for at in range(len(value) - 1, -1, -1):
        item = value[at]
        if isinstance(item, dict) and item.get("role") == "assistant" and str(item.get("id", "")).startswith("msg_"):
            rest = [i for i in value[at + 1:] if not (isinstance(i, dict) and i.get("type") in SKIPPED_ITEMS)]
            return (item["id"], rest) if rest else None
    return None


def _is_conversation(items: list[dict[str, Any]]) -> bool:
    messages = [i for i in items if i.get("type", "message") == "message"]
    return len(messages) > 1 or any(m.get("role") != "user" for m in messages)


def _chat_message(item: dict[str, Any]) -> dict[str, str]:
    """An item of a resent conversation as a chat message (developer: system)."""
    role = item.get("role")
    if item.get("type", "message") != "message" or role not in SYSTEM_ROLES | {"user", "assistant"}:
        raise FieldError(f"'input': items of type {item.get('type')!r} (role {role!r}) are not taken in a "
                         "resent conversation: a team's agents use their own tools", "input")
    content = item.get("content")
    if isinstance(content, list):  # input_text from the user, output_text from us
        if not all(isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
                   and isinstance(p.get("text"), str) for p in content):
            raise FieldError("'input': a message's content must be text parts", "input")
        content = "\n".join(p["text"] for p in content)
    if not isinstance(content, str):
        raise FieldError("'input': a message's content must be text", "input")
    return {"role": "system" if role in SYSTEM_ROLES else str(role), "content": content}


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
