"""What the workflow makes of a model that refused the agent's tools. Pure.

The model activity made the call again without tools and says why
(`ModelResponse.tools_unavailable`, activities/model_toolless.py). An agent that has tools of its
own goes on as plain chat, and the transcript says its tools were unavailable (a notice: people
see it, no model does). An agent whose only tools are handoffs cannot do its job without them
(a supervisor that cannot route): its turn fails with the reason.
"""

from __future__ import annotations

from . import roster
from .messages import Message, TeamSpec

MAX_REASON_CHARS = 300


def tools_unavailable_notice(team: TeamSpec, agent: str, model: str, reason: str,
                             agent_run: int) -> Message:
    """The notice for the transcript: whose tools, which model, the server's words."""
    names = ", ".join(t.name for t in roster.agent_tools(team, agent)) or "none"
    return Message(
        role="system", name=agent, agent_run=agent_run, kind="notice",
        content=(f"{agent}'s tools were unavailable: the model {model!r} does not support tool "
                 f"calling (the endpoint said: {reason[:MAX_REASON_CHARS]}). {agent} answered "
                 f"as plain chat, without its tools ({names})."))


def handoff_only_failure(team: TeamSpec, agent: str, model: str, reason: str) -> str | None:
    """Why the turn fails, when every tool `agent` has is a handoff; else None."""
    targets = roster.handoff_targets(team, agent)
    tools = roster.agent_tools(team, agent)
    if not targets or any(t.name not in targets for t in tools):
        return None
    peers = ", ".join(sorted(set(targets.values())))
    return (f"{agent} cannot route this turn: the model {model!r} does not support tool calling "
            f"(the endpoint said: {reason[:MAX_REASON_CHARS]}), and {agent} hands work to "
            f"{peers} only through tool calls. Give {agent} a model that supports tools, or a "
            "routing strategy that calls no model (strategy=\"rules\" or \"skills\").")
