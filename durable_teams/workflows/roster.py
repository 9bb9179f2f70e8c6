"""What each agent of a team may do: its tools, its handoff targets, its instructions. Pure.

Built-in tools (workflows/builtins.py: `ask_human`, `request_help`, `forward_message`,
`list_tools`, `list_agents`, `current_datetime`) are answered inside the workflow; every other
tool name must be in `team.tools` and runs as an activity on the worker that has its function.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from . import decision_format, handoff, routing
from .builtins import BUILTINS, REQUEST_HELP
from .handoff import HandoffView
from .messages import AgentSpec, TeamSpec, ToolSpec

CONCATENATE = "concatenate"
"""The built-in aggregation: answers joined in call order."""


def runs_as_child(team: TeamSpec, agent: str) -> bool:
    """Whether `agent` runs in a child workflow: a nested team, or marked `run_as_child`."""
    spec = team.agents.get(agent)
    return spec is not None and (spec.team is not None or spec.run_as_child)


def handoff_view(team: TeamSpec) -> HandoffView:
    """What agents are shown of handoff calls and their tool messages: none with
    langgraph-supervisor's `add_handoff_messages=False`, else the supervisor's
    `workers_see_handoffs` ("own" in a swarm)."""
    sup = team.supervisor
    if sup is None:
        return "own"
    return sup.workers_see_handoffs if sup.add_handoff_messages else "none"


def supervisor_agent(team: TeamSpec) -> AgentSpec:
    """The supervisor seen as an agent (its model, instructions and own tools)."""
    sup = team.supervisor
    assert sup is not None
    if sup.strategy == "llm-decision":  # it answers with a JSON decision, not handoff calls
        instructions = "\n\n".join(
            p for p in (sup.instructions, decision_format.decision_instructions(routing.supervisor_agents(team))) if p)
        return AgentSpec(name=sup.name, instructions=instructions, model=sup.model, tools=sup.tools,
                         output_schema=decision_format.decision_schema(sup.agents))
    return AgentSpec(name=sup.name, instructions=sup.instructions, model=sup.model, tools=sup.tools)


def agent_spec(team: TeamSpec, name: str) -> AgentSpec:
    if team.supervisor is not None and name == team.supervisor.name:
        return supervisor_agent(team)
    return team.agents[name]


def handoff_targets(team: TeamSpec, agent: str) -> dict[str, str]:
    """Handoff tool name -> agent, for the tools `agent` may use to hand work over."""
    sup = team.supervisor
    if sup is not None and agent == sup.name:
        if sup.strategy != "llm":  # the other strategies route without handoff tools
            return {}
        return {handoff.handoff_tool_name(a, sup.handoff_tool_prefix): a for a in sup.agents}
    spec = team.agents[agent]
    return {spec.handoff_tool_names.get(a) or handoff.handoff_tool_name(a): a for a in spec.handoffs}


def agent_tools(team: TeamSpec, agent: str) -> list[ToolSpec]:
    """Every tool `agent` is offered, in a stable order: its own tools, then handoffs."""
    spec = agent_spec(team, agent)
    names = list(spec.tools)
    sup = team.supervisor
    if sup is not None and sup.worker_preamble and agent != sup.name and REQUEST_HELP not in names:
        names.append(REQUEST_HELP)  # the preamble tells workers to escalate with it
    tools = [BUILTINS[t].spec(team) if t in BUILTINS else team.tools[t] for t in names]
    for tool_name, target in handoff_targets(team, agent).items():
        description = spec.handoff_descriptions.get(target) or (team.agents[target].description if sup is None else "")
        tools.append(handoff.handoff_tool_spec(target, description=description)
                     .model_copy(update={"name": tool_name}))
    return tools


_PLACEHOLDER = re.compile(r"\{(date|datetime|agent_name|supervisor_name|context\[(\w+)\])\}")


def render_instructions(
    template: str, *, now: datetime, agent: str, supervisor: str | None, context: dict[str, Any]
) -> str:
    """Fill `{date}`, `{datetime}`, `{agent_name}`, `{supervisor_name}`, `{context[key]}`.

    `now` is the workflow's clock (`workflow.now()`), never the wall clock, so a replay fills
    the same text. Unknown placeholders and other braces are left untouched (JSON examples in
    prompts stay intact).
    """

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "date":
            return now.date().isoformat()
        if key == "datetime":
            return now.isoformat(timespec="seconds")
        if key == "agent_name":
            return agent
        if key == "supervisor_name":
            return supervisor or ""
        value = context.get(match.group(2))
        return match.group(0) if value is None else str(value)

    return _PLACEHOLDER.sub(fill, template)


def supervisor_block(supervisor: str) -> str:
    """ABI's preamble for workers under a supervisor: what they are and how to escalate."""
    return (
        f"You are a specialized agent working under {supervisor}. Do only the part of the task "
        f"within your expertise. If the request is outside it, or you cannot complete it, call "
        f"{REQUEST_HELP} with the reason instead of guessing.\n\n"
    )


_MENTION = re.compile(r"^\s*@([\w.-]+)[\s,:]*(.*)$", re.DOTALL)


def parse_mention(team: TeamSpec, text: str) -> tuple[str | None, str, str | None]:
    """ABI's `@agent_name` routing: (agent, text without the mention, problem).

    A message that does not start with `@` is (None, text, None). An unknown name is a problem
    that lists the agents, so the user can correct it without a model call.
    """
    match = _MENTION.match(text)
    if match is None:
        return None, text, None
    name, rest = match.group(1), match.group(2).strip()
    if name in team.agents:
        return name, rest or text, None
    names = ", ".join(f"@{a}" for a in team.agents)
    return None, text, f"There is no agent named {name!r} in this team. Agents: {names}."
