"""A scripted model: replays written replies, for demos and tests (no network, no key).

A script maps an agent's name to its replies in order; the n-th model call of that agent in a
conversation gets reply n (`ModelRequest.agent_call_index`, counted by the workflow, so a retry
or a worker restart replays the same reply). A callable script decides from the request instead.
An exhausted script is a non-retryable error, never a loop.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ApplicationError

from durable_teams.activities.call_facts import note
from durable_teams.activities.model import ModelBackend, chat_messages
from durable_teams.activities.wire import tool_dict
from durable_teams.live import hub as live
from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)

Step = Message
"""One scripted reply: an assistant message (text, tool calls, or both)."""

ScriptFn = Callable[
    [ModelRequest, list[dict[str, Any]], list[dict[str, Any]]], Step | ModelResponse
]
"""`(req, messages, tools) -> Step | ModelResponse`: a script that looks at the request."""


def say(text: str) -> Step:
    """A final answer."""
    return Message(role="assistant", content=text)


def call(tool: str, **arguments: Any) -> Step:
    """A reply with one tool call (arguments become a JSON string)."""
    return calls((tool, arguments))


def calls(*tool_calls: tuple[str, dict[str, Any]], text: str = "") -> Step:
    """A reply with several tool calls at once (parallel calls, or a handoff with a tool)."""
    return Message(
        role="assistant",
        content=text,
        tool_calls=[ToolCall(id="", name=name, arguments=json.dumps(args)) for name, args in tool_calls],
    )


def raw_call(tool: str, raw_arguments: str) -> Step:
    """A tool call whose argument string is sent exactly as given (even malformed JSON)."""
    return Message(
        role="assistant", content="", tool_calls=[ToolCall(id="", name=tool, arguments=raw_arguments)]
    )


class ScriptedModel(ModelBackend):
    """A `ModelBackend` that replays a script and records what it was asked (`requests`): each
    request with its messages and tools in Chat Completions form, as a log of an OpenAI-style
    model would show them (and as a callable script receives them)."""

    scripted = True
    """Workers on this backend say so in their identity, so clients can tell people."""

    def __init__(self, script: dict[str, list[Step]] | ScriptFn, *, stream: bool = False) -> None:
        """`stream=True` sends each reply's text as live deltas, word by word, before
        returning it (durable_teams/live/hub.py), as a streaming model would."""
        self.script = script
        self.stream = stream
        self.requests: list[tuple[ModelRequest, list[dict[str, Any]], list[dict[str, Any]]]] = []

    def step_for(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Step | ModelResponse:
        """The scripted reply for this request, or a non-retryable error when there is none."""
        if callable(self.script):
            return self.script(req, messages, tools)
        steps = self.script.get(req.agent, [])
        index = req.agent_call_index
        if index >= len(steps):
            known = ", ".join(sorted(self.script)) or "none"
            raise ApplicationError(
                f"The scripted model has no step {index + 1} for agent {req.agent!r}: its "
                f"script has {len(steps)} step(s) (scripted agents: {known}). Add steps, or "
                "check that the agent is not looping.",
                type="ScriptExhausted",
                non_retryable=True,
            )
        return steps[index]

    async def complete(
        self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        # Recorded and shown to a callable script as a Chat Completions model would see them
        # (system prompt first), so scripts and tests read requests the way they read a log.
        chat = chat_messages(req.instructions, messages)
        tool_dicts = [tool_dict(t) for t in tools]
        self.requests.append((req, chat, tool_dicts))
        note(**{"gen_ai.provider.name": "durable_teams.scripted", "gen_ai.response.model": req.model,
                 "gen_ai.response.id": f"scripted-{req.agent}-{req.agent_call_index}"})
        step = self.step_for(req, chat, tool_dicts)
        response = step if isinstance(step, ModelResponse) else ModelResponse(message=step)
        ids = [
            c if c.id else c.model_copy(update={"id": f"call_{req.agent}_{req.agent_call_index}_{j}"})
            for j, c in enumerate(response.message.tool_calls)
        ]
        if self.stream and response.message.content:
            for piece in re.findall(r"\S+\s*|\s+", response.message.content):
                live.emit(piece)
                await asyncio.sleep(0)  # let subscribers read, as a network stream would
        finish = response.finish_reason or ("tool_calls" if ids else "stop")
        message = response.message.model_copy(update={"tool_calls": ids})
        return response.model_copy(update={"message": message, "finish_reason": finish})
