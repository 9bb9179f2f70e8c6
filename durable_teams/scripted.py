"""A scripted model: replays recorded responses, for demos and tests (no network, no key).

A script maps an agent's name to its replies in order; the n-th model call of that agent in a
conversation gets reply n (`ModelRequest.agent_call_index`, counted by the workflow, so retries
and worker restarts replay the same reply).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ApplicationError

from workflows.messages import Message, ModelRequest, ModelResponse, ToolCall

Step = Message
ScriptFn = Callable[[ModelRequest, list[dict[str, Any]], list[dict[str, Any]]], "Step | ModelResponse"]


def say(text: str) -> Step:
    """A final answer."""
    return Message(role="assistant", content=text)


def call(tool: str, **arguments: Any) -> Step:
    """A reply with one tool call."""
    return calls((tool, arguments))


def calls(*tool_calls: tuple[str, dict[str, Any]], text: str = "") -> Step:
    """A reply with several tool calls (parallel calls, or a handoff mixed with a tool)."""
    return Message(role="assistant", content=text, tool_calls=[
        ToolCall(id="", name=name, arguments=json.dumps(args)) for name, args in tool_calls])


def raw_call(tool: str, raw_arguments: str) -> Step:
    """A tool call whose argument string is sent exactly as given (even malformed JSON)."""
    return Message(role="assistant", content="", tool_calls=[ToolCall(id="", name=tool, arguments=raw_arguments)])


class ScriptedModel:
    """A `ModelBackend` that replays a script; records what it was asked."""

    def __init__(self, script: dict[str, list[Step]] | ScriptFn):
        self.script = script
        self.requests: list[tuple[ModelRequest, list[dict[str, Any]], list[dict[str, Any]]]] = []

    async def complete(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        self.requests.append((req, messages, tools))
        if callable(self.script):
            step = self.script(req, messages, tools)
        else:
            steps = self.script.get(req.agent, [])
            if req.agent_call_index >= len(steps):
                raise ApplicationError(
                    f"The scripted model has no step {req.agent_call_index + 1} for agent "
                    f"{req.agent!r} (it has {len(steps)}).",
                    type="ScriptExhausted", non_retryable=True)
            step = steps[req.agent_call_index]
        if isinstance(step, ModelResponse):
            return step
        ids = [
            c.model_copy(update={"id": c.id or f"call_{req.agent}_{req.agent_call_index}_{j}"})
            for j, c in enumerate(step.tool_calls)
        ]
        finish = "tool_calls" if ids else "stop"
        return ModelResponse(message=step.model_copy(update={"tool_calls": ids}), finish_reason=finish)
