"""What the MCP door says and reads: a turn's outcome as a tool result, a question as an
elicitation form, and the answer a person gave in one (shared by tool calls and tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import question_text

ANSWER_SCHEMA: dict[str, Any] = {"type": "object", "required": ["answer"],
                                 "properties": {"answer": {"type": "string", "title": "Your answer"}}}
APPROVAL_SCHEMA: dict[str, Any] = {"type": "object", "required": ["approved"],
                                   "properties": {"approved": {"type": "boolean", "title": "Approve"}}}


def text_result(text: str, thread: str, status: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error,
                                structured_content={"thread_id": thread, "status": status, "text": text})


def schema_of(q: Question) -> dict[str, Any]:
    return APPROVAL_SCHEMA if q.kind == "approval" else ANSWER_SCHEMA


def elicit_form(q: Question) -> types.ElicitRequest:
    """The question as an elicitation request (an `inputRequests` entry)."""
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=question_text(q),
                                                                    requested_schema=schema_of(q)))


def answer_text(response: Any, question: Question) -> str | None:
    """The typed answer an elicitation response carries ("yes"/"no" for an approval, read
    strictly by the gateway like any other answer); None when the person declined or cancelled
    a question (an approval declined is a no), or the response is not an elicitation's."""
    if isinstance(response, Mapping):
        action, content = response.get("action"), response.get("content") or {}
    else:
        action, content = getattr(response, "action", None), getattr(response, "content", None) or {}
    if not isinstance(content, Mapping):
        return None
    if question.kind == "approval":
        if action == "decline":
            return "no"
        if action == "accept" and isinstance(content.get("approved"), bool):
            return "yes" if content["approved"] else "no"
        return None
    text = content.get("answer") if action == "accept" else None
    return text if isinstance(text, str) and text.strip() else None
