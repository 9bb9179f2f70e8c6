"""The built-in tools, one entry each: name, schema, and how the workflow answers a call. Pure.

Built-ins are answered inside the workflow, from its own state and clock, never by an activity:
`ask_human` waits for a person, `request_help` hands the turn back to the supervisor,
`forward_message` returns a worker's answer verbatim, `list_tools`, `list_agents`,
`current_datetime`, and ABI's `list_intents`, `get_current_active_agent` and
`get_supervisor_agent` answer at once. Handoff tools (`transfer_to_<agent>`) are named per team, so
they are classified apart (workflows/handoff.py), before these.

A handler gets the call and a `CallContext` (the team, the calling agent and its tools, the
shared conversation, the workflow's clock, the desk that asks people); `AgentLoop` provides it.
`now()` is the workflow's clock (`workflow.now()`), never the wall clock, so a replay answers
the same.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .messages import Message, TeamSpec, ToolCall, ToolSpec

ASK_HUMAN = "ask_human"
REQUEST_HELP = "request_help"
FORWARD_MESSAGE = "forward_message"
LIST_TOOLS = "list_tools"
LIST_AGENTS = "list_agents"
CURRENT_DATETIME = "current_datetime"
LIST_INTENTS = "list_intents"
GET_CURRENT_ACTIVE_AGENT = "get_current_active_agent"
GET_SUPERVISOR_AGENT = "get_supervisor_agent"


class CallContext(Protocol):
    """What a built-in may read: the calling agent's situation, never more."""

    @property
    def team(self) -> TeamSpec: ...

    @property
    def agent(self) -> str: ...

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool the calling agent is offered."""
        ...

    def now(self) -> datetime: ...

    def shared_messages(self) -> list[Message]: ...

    def active_agent(self) -> str | None:
        """A swarm's active agent (None in a supervisor team, or before the first turn)."""
        ...

    def ask(self, call: ToolCall) -> Awaitable[str]:
        """Put the call's question to a person and wait for the answer."""
        ...


@dataclass(frozen=True)
class Answer:
    """A built-in's tool message, and what it does to the agent's run."""

    content: str
    kind: Literal["message", "human", "error"] = "message"
    escalate: str | None = None
    """`request_help`: the supervisor takes the turn back, with this reason."""
    forward: str | None = None
    """`forward_message`: this text is the turn's answer, verbatim."""


@dataclass(frozen=True)
class Builtin:
    name: str
    spec: Callable[[TeamSpec], ToolSpec]
    """The schema the model is offered (it may name the team's supervisor)."""
    handle: Callable[[CallContext, ToolCall], Awaitable[Answer]]
    remember: bool = False
    """Keep the answer in state as soon as it exists (it came from a person): a continue-as-new
    while the rest of the batch runs reuses it instead of asking again."""


def argument(call: ToolCall, key: str) -> str:
    """One argument of a call as text ("" when absent or not JSON)."""
    try:
        value = json.loads(call.arguments or "{}").get(key, "")
    except (ValueError, AttributeError):
        return ""
    return str(value)


def _object(properties: dict, required: list[str] | None = None) -> dict:
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _supervisor_name(team: TeamSpec) -> str:
    return team.supervisor.name if team.supervisor else "supervisor"


# ---- ask_human ---------------------------------------------------------------------------------


def _ask_human_spec(team: TeamSpec) -> ToolSpec:
    return ToolSpec(
        name=ASK_HUMAN,
        description=(
            "Ask the human user a question and wait for the answer. Use it when you need "
            "information only the user has (an order number, a choice, a confirmation)."
        ),
        parameters=_object({
            "question": {"type": "string", "description": "The question to ask."},
            "suggestions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Optional suggested answers.",
            },
        }, ["question"]),
    )


async def _ask_human(ctx: CallContext, call: ToolCall) -> Answer:
    return Answer(await ctx.ask(call), kind="human")


# ---- request_help ------------------------------------------------------------------------------


def _request_help_spec(team: TeamSpec) -> ToolSpec:
    return ToolSpec(
        name=REQUEST_HELP,
        description=(
            f"Escalate back to {_supervisor_name(team)} when the request is outside your "
            "expertise or you cannot complete it. Give the reason."
        ),
        parameters=_object({"reason": {"type": "string", "description": "Why you need help."}},
                           ["reason"]),
    )


async def _request_help(ctx: CallContext, call: ToolCall) -> Answer:
    reason = argument(call, "reason") or "no reason given"
    return Answer(f"Escalated to {_supervisor_name(ctx.team)}: {reason}", escalate=reason)


# ---- forward_message ---------------------------------------------------------------------------


def _forward_message_spec(team: TeamSpec) -> ToolSpec:
    return ToolSpec(
        name=FORWARD_MESSAGE,
        description=(
            "Forwards the latest message from the specified agent to the user without any "
            "changes. Use this to save time when the agent's answer is already final."
        ),
        parameters=_object({"from_agent": {"type": "string", "description": "The agent's name."}},
                           ["from_agent"]),
    )


async def _forward_message(ctx: CallContext, call: ToolCall) -> Answer:
    source = argument(call, "from_agent")
    shared = ctx.shared_messages()
    for m in reversed(shared):
        if m.role == "assistant" and m.name == source and m.kind == "message" and m.content:
            return Answer(f"Forwarded the latest message from {source}.", forward=m.content)
    names = sorted({m.name for m in shared if m.role == "assistant" and m.name})
    return Answer(f"Could not find message from source agent {source}. Found names: {names}",
                  kind="error")


# ---- list_tools, list_agents, current_datetime -------------------------------------------------


async def _list_tools(ctx: CallContext, call: ToolCall) -> Answer:
    return Answer("\n".join(f"{t.name}: {t.description}" for t in ctx.tools) or "No tools.")


async def _list_agents(ctx: CallContext, call: ToolCall) -> Answer:
    return Answer("\n".join(f"{a.name}: {a.description or ', '.join(a.skills) or 'no description'}"
                            for a in ctx.team.agents.values()))


def _current_datetime_spec(team: TeamSpec) -> ToolSpec:
    return ToolSpec(
        name=CURRENT_DATETIME,
        description="The current date and time in a timezone (IANA name, default UTC).",
        parameters=_object({
            "timezone": {"type": "string", "description": "e.g. Europe/Paris, America/New_York"}
        }),
    )


def current_datetime(now: datetime, arguments: str) -> str:
    """`now` in the timezone the call names: ISO 8601 with the weekday, or a readable error."""
    try:
        args = json.loads(arguments or "{}")
        zone = str(args.get("timezone") or "UTC") if isinstance(args, dict) else ""
    except ValueError:
        zone = ""
    if not zone:
        return 'Error: current_datetime takes {"timezone": "<IANA name>"}.'
    try:
        local = now.astimezone(ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        return f"Error: unknown timezone {zone!r}. Use an IANA name such as Europe/Paris."
    return f"{local.isoformat(timespec='seconds')} ({local.strftime('%A')}, {zone})"


async def _current_datetime(ctx: CallContext, call: ToolCall) -> Answer:
    return Answer(current_datetime(ctx.now(), call.arguments))


# ---- list_intents, get_current_active_agent, get_supervisor_agent (ABI's) -----------------------


async def _list_intents(ctx: CallContext, call: ToolCall) -> Answer:
    """The intents the calling agent answers by: the team's, then its own."""
    own = ctx.team.agents[ctx.agent].intents if ctx.agent in ctx.team.agents else []
    lines = [f"{' | '.join(i.phrases)} -> {i.action}" for i in [*ctx.team.intents, *own]]
    return Answer("\n".join(lines) or "No intents.")


async def _current_active_agent(ctx: CallContext, call: ToolCall) -> Answer:
    return Answer(ctx.active_agent() or ctx.agent)


async def _supervisor_agent(ctx: CallContext, call: ToolCall) -> Answer:
    sup = ctx.team.supervisor
    return Answer(sup.name if sup else "This team has no supervisor: its agents hand off to each other.")


def _plain_spec(name: str, description: str) -> Callable[[TeamSpec], ToolSpec]:
    return lambda team: ToolSpec(name=name, description=description)


BUILTINS: dict[str, Builtin] = {b.name: b for b in [
    Builtin(ASK_HUMAN, _ask_human_spec, _ask_human, remember=True),
    Builtin(REQUEST_HELP, _request_help_spec, _request_help),
    Builtin(FORWARD_MESSAGE, _forward_message_spec, _forward_message),
    Builtin(LIST_TOOLS, _plain_spec(LIST_TOOLS, "List the tools you can use."), _list_tools),
    Builtin(LIST_AGENTS, _plain_spec(LIST_AGENTS, "List the agents of this team and what they do."),
            _list_agents),
    Builtin(CURRENT_DATETIME, _current_datetime_spec, _current_datetime),
    Builtin(LIST_INTENTS, _plain_spec(LIST_INTENTS, "List the intents: phrases answered without "
                                      "a model call, and what each does."), _list_intents),
    Builtin(GET_CURRENT_ACTIVE_AGENT, _plain_spec(GET_CURRENT_ACTIVE_AGENT, "The name of the agent "
                                                  "handling the conversation now."), _current_active_agent),
    Builtin(GET_SUPERVISOR_AGENT, _plain_spec(GET_SUPERVISOR_AGENT, "The name of this team's "
                                              "supervisor."), _supervisor_agent),
]}
"""Every built-in tool by name: an agent may list any of these in its `tools`."""
