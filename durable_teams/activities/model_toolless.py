"""Models without tool calling: the endpoint refuses `tools`, the agent goes on as plain chat.

ABI's agents bind their tools to the model, and "if the model does not support tool calling,
it falls back to plain chat with no tool access". Here a call whose request carried `tools`
and met a refusal of them (Ollama: `registry.ollama.ai/library/X does not support tools`;
llama.cpp: `tools param requires --jinja flag`; vLLM: `"auto" tool choice requires
--enable-auto-tool-choice ...`; OpenAI: `unsupported_parameter` on `tools`) is made again
without tools, in the same activity attempt. The backend remembers the model (`ToollessModels`),
so its later calls on this worker skip tools at once. The response says so
(`ModelResponse.tools_unavailable`); the workflow notes it in the transcript, or fails the turn
of an agent that can only hand off (workflows/tool_support.py).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from durable_teams.encryption.redact import scrub
from durable_teams.workflows.messages import ModelResponse, ToolSpec

_REFUSAL = re.compile(
    r"""does\s+not\s+support\s+(tools|tool[\s_-]*(calling|calls?|use)|function[\s_-]*call(ing|s)?|functions)\b
    | \b(tools?|tool[\s_-]*(calling|calls|use)|function[\s_-]*calling)\s+(is|are)\s+not\s+(supported|enabled|available)
    | \bnot\s+support(ed)?\s+(for\s+)?(tools|tool[\s_-]*calling|function[\s_-]*calling)
    | \btools?\s+param(eter)?s?\s+requires?\b
    | --jinja\b
    | enable[-_]auto[-_]tool[-_]choice
    | \bunsupported\s+(parameter|param|field|argument)\W{0,4}\s*'?"?(tools|tool_choice)\b
    | \b(tools|tool_choice)\b.{0,40}\bnot\s+supported\s+with\s+this\s+model
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""The ways servers word "this model cannot take tools" (the class, not one server's string)."""

_STATUSES = {400, 404, 422, 500, 501}
"""Statuses such a refusal comes with: 400 mostly; 422 (validation), 404/500/501 (llama.cpp and
older servers). The text decides; the status only keeps a rate limit or an outage out."""


class ToolsRefused(Exception):
    """The endpoint refused the request's `tools`; `reason` quotes it (scrubbed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _error_parts(body: Any) -> tuple[str, str, str]:
    """(message, param, code) of an OpenAI-style error body."""
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict):
        return (str(inner.get("message") or ""), str(inner.get("param") or ""), str(inner.get("code") or ""))
    return (str(inner or ""), "", "")


def refusal_reason(status: int, body: Any, text: str = "") -> str | None:
    """The server's words when an error (HTTP `status`, JSON `body`, or raw `text`) says the
    model does not take tools; None for any other error. Pure."""
    if status not in _STATUSES:
        return None
    message, param, code = _error_parts(body)
    message = message or text
    if param in ("tools", "tool_choice") and (code in ("unsupported_parameter", "unsupported_value")
                                               or "not supported" in message.lower()):
        return message or f"the parameter {param!r} is not supported"
    return message if message and _REFUSAL.search(message) else None


def tools_refusal(err: BaseException) -> ToolsRefused | None:
    """`ToolsRefused` for an openai error that refuses tools; else None."""
    import openai  # loaded already: the error came from its client (activities/model.py)

    if not isinstance(err, openai.APIStatusError):
        return None
    reason = refusal_reason(err.status_code, err.body, err.message or "")
    return None if reason is None else ToolsRefused(" ".join(scrub(reason).split())[:300])


Call = Callable[[list[ToolSpec]], Awaitable[ModelResponse]]


class ToollessModels:
    """The models this worker's backend has seen refuse tools, with the server's words: their
    later calls go without tools at once (no refused request first). Per backend, so per
    endpoint; a worker process learns it once per model."""

    def __init__(self) -> None:
        self.models: dict[str, str] = {}

    async def complete(self, model: str, tools: list[ToolSpec], call: Call) -> ModelResponse:
        """`call(tools)`, or `call([])` for a model that refuses tools, with the response's
        `tools_unavailable` set to why."""
        why = self.models.get(model) if tools else None
        if why is None:
            try:
                return await call(tools)
            except ToolsRefused as refused:
                if not tools:
                    raise
                why = self.models[model] = refused.reason
        response = await call([])
        return response.model_copy(update={"tools_unavailable": why})
