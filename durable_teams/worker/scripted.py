"""A scripted model: replays written replies, for demos and tests (no network, no key).

A script maps an agent's name to its replies in order; the n-th model call of that agent in a
conversation gets reply n (`ModelRequest.agent_call_index`, counted by the workflow, so a retry
or a worker restart replays the same reply). Scripts per team (`teams=`) keep two teams' agents
of one name apart. A step may depend on what happened (`when`: a denied approval, a failed
tool). A callable script decides from the request instead. A team or agent with no step left is
a non-retryable error that says how to script it, never a loop and never another team's reply.
The file format for your own teams is in durable_teams/worker/script_files.py
(docs/scripted-models.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.exceptions import ApplicationError

from durable_teams.activities.call_facts import note
from durable_teams.activities.model import ModelBackend, chat_messages
from durable_teams.activities.wire import tool_dict
from durable_teams.live import hub as live
from durable_teams.teams.team_tools import owners
from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    wire_name,
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


@dataclass(frozen=True)
class When:
    """A step chosen by what the agent was told since its previous step: `then` when `seen`
    occurs in one of those messages (a tool's result, a person's denial, another agent's
    reply; ignoring case), else `otherwise`. Deterministic: the same view gives the same step
    on a retry."""

    seen: str
    then: Step
    otherwise: Step

    def choose(self, agent: str, messages: list[dict[str, Any]]) -> Step:
        told = "\n".join(news(agent, messages)).casefold()
        return self.then if self.seen.casefold() in told else self.otherwise


def when(seen: str, then: Step, otherwise: Step) -> When:
    """`then` if `seen` occurs in what the agent was told since its last step, else
    `otherwise`: `when("It was not run", then=say("Not refunded."), otherwise=say("Refunded."))`."""
    return When(seen, then, otherwise)


def news(agent: str, messages: list[dict[str, Any]]) -> list[str]:
    """The text of the messages after `agent`'s own last message (all of them before its first),
    the system prompt left out (it names every agent and tool, whatever happened)."""
    own = wire_name(agent)
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("name") == own),
               default=-1)
    return [str(m.get("content") or "") for m in messages[last + 1:] if m.get("role") != "system"]


ScriptStep = Step | When
AgentScript = Mapping[str, Sequence[ScriptStep]]
"""An agent's name -> its steps, in order."""

SCRIPT_HELP = ("script it (durable-teams worker --script FILE, or a SCRIPT beside TEAMS in your "
               "team module: docs/scripted-models.md), or set OPENAI_BASE_URL to a model server "
               "(Ollama, llama.cpp) or OPENAI_API_KEY on the worker")


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

    def __init__(self, script: AgentScript | ScriptFn | None = None, *,
                 teams: Mapping[str, AgentScript] | None = None, stream: bool = False) -> None:
        """`script` answers any team's agents by name; `teams` (team name -> agent script)
        answers only the teams it names, and a request of another team is refused with a
        reason. `stream=True` sends each reply's text as live deltas, word by word, before
        returning it (durable_teams/live/hub.py), as a streaming model would."""
        self.script = script if script is not None or teams is not None else {}
        self.teams = teams
        self.stream = stream
        self.requests: list[tuple[ModelRequest, list[dict[str, Any]], list[dict[str, Any]]]] = []

    def step_for(
        self, req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Step | ModelResponse:
        """The scripted reply for this request, or a non-retryable error when there is none."""
        if callable(self.script):
            return self.script(req, messages, tools)
        script = self.script_of(req)
        steps = script.get(req.agent, [])
        index = req.agent_call_index
        if index >= len(steps):
            known = ", ".join(sorted(script)) or "none"
            team = f" of team {req.team!r}" if req.team else ""
            raise ApplicationError(
                f"The scripted model has no step {index + 1} for agent {req.agent!r}{team}: its "
                f"script has {len(steps)} step(s) (scripted agents: {known}). Add steps, or "
                f"check that the agent is not looping. To try your own team, {SCRIPT_HELP}.",
                type="ScriptExhausted",
                non_retryable=True,
            )
        step = steps[index]
        return step.choose(req.agent, messages) if isinstance(step, When) else step

    def script_of(self, req: ModelRequest) -> AgentScript:
        """The agent script that answers this request's team (`script` for a request that
        names no team: one recorded before requests carried it)."""
        assert not callable(self.script)
        if self.teams is None or req.team is None:
            return self.script or {}
        for team in owners(req.team):  # an agent run as a child answers from its team's script
            if team in self.teams:
                return self.teams[team]
        raise ApplicationError(
            f"The scripted model has no replies for team {req.team!r} (agent {req.agent!r}): "
            "no model is configured on the worker, so agents answer from scripts, and "
            f"this team has none. To see it work, {SCRIPT_HELP}.",
            type="NoScript",
            non_retryable=True,
        )

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
