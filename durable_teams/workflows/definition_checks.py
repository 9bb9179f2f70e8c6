"""Checks that a team definition can run, made when it is defined (`Agent(...)`, `Supervisor(...)`,
`Swarm(...)`, `.compile()`), so a mistake is a `TeamError` naming it, not a failed first turn.

The one place a team's spec is checked, and where `TeamError` lives: `validate_team` checks
structure (every name resolves, nesting, strategies), which the workflow repeats at its start;
`check_definition` what an OpenAI-compatible endpoint will accept and what would be ambiguous
at run time: wire names, handoff tool collisions, tools shadowing handoffs or built-ins, numeric
options. Pure. (The builders check their own arguments first: durable_teams/teams/builder_checks.py.)

Agent names are display names: they may contain spaces, which become `_` in the handoff tool
(`transfer_to_math_expert`) and in the message `name` sent to the model; anything else outside
letters, digits, `_` and `-` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import handoff, routing
from .builtins import BUILTINS
from .intents import normalize
from .messages import TeamSpec, wire_name
from .roster import CONCATENATE

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI-compatible endpoints accept as a function (tool) name and a message `name`."""

_ALLOWED = "1-64 characters: letters, digits, '_' and '-'"


class TeamError(ValueError):
    """A team definition that cannot run (unknown agent or tool, duplicate names)."""


MAX_NESTING = 5
"""How deep teams may nest: deeper is almost surely a team placed inside itself."""


def tool_name_problem(name: str) -> str | None:
    if FUNCTION_NAME.match(name):
        return None
    return f"tool name {name!r} is not accepted by OpenAI-compatible endpoints ({_ALLOWED})"


def agent_name_problem(name: str) -> str | None:
    if not name.strip():
        return "an agent needs a non-empty name"
    if FUNCTION_NAME.match(wire_name(name)):
        return None
    return (f"agent name {name!r} cannot be sent to a model: its message name would be "
            f"{wire_name(name)!r}, and names must be {_ALLOWED} (spaces become '_')")


def positive(owner: str, option: str, value: float | None) -> str | None:
    """A problem if `value` is not a finite number > 0 (None means "not set": fine)."""
    # NaN fails both comparisons, so it is refused too
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                         and 0 < value < float("inf")):
        return None
    return f"{owner}: {option} must be a number > 0, got {value!r}"


def at_least(owner: str, option: str, value: int, low: int) -> str | None:
    """A problem if `value` is not an integer >= `low`."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= low:
        return None
    return f"{owner}: {option} must be an integer >= {low}, got {value!r}"


def raise_first(problems: Iterable[str | None]) -> None:
    """Raise a `TeamError` with every problem found, if any."""
    found = [p for p in problems if p]
    if found:
        raise TeamError("; ".join(found))


def _numbers(team: TeamSpec) -> list[str | None]:
    b = team.budgets
    found = [at_least("budgets", "max_model_calls", b.max_model_calls, 1),
             at_least("budgets", "max_handoffs", b.max_handoffs, 0),
             at_least("budgets", "max_tool_calls", b.max_tool_calls, 0),
             positive(f"team {team.name!r}", "ask_human_timeout_seconds", team.ask_human_timeout_seconds)]
    if team.supervisor is not None:
        found.append(at_least(f"supervisor {team.supervisor.name!r}", "max_parallel_handoffs",
                              team.supervisor.max_parallel_handoffs, 1))
    for spec in team.tools.values():
        found += [positive(f"tool {spec.name!r}", "timeout_seconds", spec.timeout_seconds),
                  at_least(f"tool {spec.name!r}", "max_attempts", spec.max_attempts, 1),
                  positive(f"tool {spec.name!r}", "retry_interval_seconds", spec.retry_interval_seconds)]
    for agent in team.agents.values():
        t = agent.temperature
        if t is not None and not (isinstance(t, int | float) and 0 <= t <= 2):
            found.append(f"agent {agent.name!r}: temperature must be between 0 and 2, got {t!r}")
    return found


def _handoff_tools(team: TeamSpec) -> dict[str, list[tuple[str, str]]]:
    """Agent (or supervisor) -> [(handoff tool name, target)], duplicates kept."""
    out: dict[str, list[tuple[str, str]]] = {}
    sup = team.supervisor
    if sup is not None and sup.strategy == "llm":
        out[sup.name] = [(handoff.handoff_tool_name(a, sup.handoff_tool_prefix), a) for a in sup.agents]
    for name, spec in team.agents.items():
        out[name] = [(spec.handoff_tool_names.get(a) or handoff.handoff_tool_name(a), a)
                     for a in spec.handoffs]
    return out


def _handoff_problems(team: TeamSpec) -> list[str]:
    found: list[str] = []
    owned = {n: set(a.tools) for n, a in team.agents.items()}
    if team.supervisor is not None:
        owned[team.supervisor.name] = set(team.supervisor.tools)
    for agent, tools in _handoff_tools(team).items():
        seen: dict[str, str] = {}
        for tool, target in tools:
            if not FUNCTION_NAME.match(tool):
                found.append(f"the handoff tool to {target!r} would be named {tool!r} ({len(tool)} "
                             f"characters), which endpoints refuse ({_ALLOWED}): use a shorter "
                             "agent name or handoff prefix")
            if tool in seen and seen[tool] != target:
                found.append(f"agents {seen[tool]!r} and {target!r} would both get the handoff "
                             f"tool {tool!r} of {agent!r}: rename one")
            seen[tool] = target
            if tool in owned.get(agent, set()) or tool in BUILTINS:
                found.append(f"{agent!r} has a tool named {tool!r}, which shadows its handoff to {target!r}")
    return found


def definition_problems(team: TeamSpec) -> list[str]:
    """Everything in `team` (nested teams included) that would fail or be ambiguous at run time."""
    found: list[str | None] = []
    if team.supervisor is not None and not team.supervisor.agents:
        found.append(f"supervisor {team.supervisor.name!r} has no agents")
    if not team.agents:
        found.append(f"team {team.name!r} has no agents")
    names = list(team.agents) + ([team.supervisor.name] if team.supervisor else [])
    found += [agent_name_problem(n) for n in names]
    found += _breakpoint_problems(team)
    for name in team.tools:
        found.append(tool_name_problem(name))
        if name in BUILTINS:
            found.append(f"tool {name!r} shadows the built-in tool of that name: rename it, or "
                         f"name the built-in as the string {name!r}")
    found += _numbers(team)
    found += _handoff_problems(team)
    found += _intent_problems(team)
    for name, agent in team.agents.items():
        if agent.team is not None:
            found += [f"in nested team {name!r}: {p}" for p in definition_problems(agent.team)]
    return [p for p in found if p]


def _breakpoint_problems(team: TeamSpec) -> list[str]:
    """Breakpoint names (workflows/breakpoints.py) that would never pause: a typo, a tool of
    another agent, or a nested team named from outside it (its breakpoints are its own)."""
    found: list[str] = []
    steps = list(team.agents) + ([team.supervisor.name] if team.supervisor else [])
    for which in ("interrupt_before", "interrupt_after"):
        unknown = [n for n in getattr(team, which) if n != "tools" and n not in team.tools and n not in steps]
        if unknown:
            found.append(f"{which} names no tool or agent of team {team.name!r}: {', '.join(unknown)} "
                         f"(its tools: {', '.join(team.tools) or 'none'}; its agents: {', '.join(steps)}; "
                         "or \"tools\" for every tool)")
        nested = [n for n in getattr(team, which) if n in team.agents and team.agents[n].team is not None]
        if nested:
            found.append(f"{which} names the nested team {', '.join(nested)}: declare its breakpoints "
                         "on its own team or agents")
        for name, agent in team.agents.items():
            own = getattr(agent, which)
            if own and agent.team is not None:
                found.append(f"agent {name!r} is a nested team: declare its breakpoints on its own "
                             f"team or agents, not in {which}")
                continue
            unknown = [n for n in own if n not in ("tools", "agent", name) and n not in agent.tools]
            if unknown:
                found.append(f"{which} of agent {name!r} names none of its tools: {', '.join(unknown)} "
                             f"(its tools: {', '.join(agent.tools) or 'none'}; or \"tools\" for all of "
                             "them, \"agent\" for the agent itself)")
    return found


def _intent_problems(team: TeamSpec) -> list[str]:
    """Intents naming a tool or agent that is not there, a tool that waits for a person
    (an intent acts with no one to ask), or one phrase declared twice."""
    found: list[str] = []
    seen: dict[str, str] = {}
    owners = [("the team", team.intents, set(team.tools))]
    owners += [(f"agent {n!r}", a.intents, set(a.tools)) for n, a in team.agents.items()]
    for owner, intents, tools in owners:
        for intent in intents:
            if intent.tool is not None and (intent.tool not in team.tools or intent.tool not in tools):
                found.append(f"an intent of {owner} calls {intent.tool!r}, which is not a tool of "
                             f"{owner} (built-ins are not called by intents)")
            elif intent.tool is not None and team.tools[intent.tool].needs_approval:
                found.append(f"an intent of {owner} calls {intent.tool!r}, which needs a person's "
                             "approval: an intent acts without asking")
            if intent.agent is not None and intent.agent not in team.agents:
                found.append(f"an intent of {owner} hands to {intent.agent!r}, which is not an "
                             f"agent of team {team.name!r}")
            for phrase in intent.phrases:
                key = normalize(phrase)
                if key in seen:
                    found.append(f"the intent phrase {phrase!r} is declared twice ({seen[key]}, {owner})")
                seen.setdefault(key, owner)
    return found


def _normalized_clashes(team: TeamSpec) -> list[str]:
    """Names that differ but read the same to a model (`Math Expert`, `math_expert`)."""
    found: list[str] = []
    first: dict[str, str] = {}
    for name in tree_names(team):
        key = handoff.normalize_agent_name(name)
        if key in first and first[key] != name:
            found.append(f"agents {first[key]!r} and {name!r} both become {key!r} in handoff "
                         "tools and routing: rename one")
        first.setdefault(key, name)
    return found


def check_definition(team: TeamSpec) -> None:
    """Raise a `TeamError` listing every problem `definition_problems` finds, and names in
    the whole team tree that a model could not tell apart."""
    raise_first([*definition_problems(team), *_normalized_clashes(team)])


def validate_team(team: TeamSpec) -> None:
    """Check names before anything runs, so a bad team fails at start with a clear message.
    Nested teams are checked too, and every agent name must be unique across the whole tree:
    names identify agents in transcripts, scripted models and pending questions."""
    _validate(team, depth=0)
    seen: set[str] = set()
    for name in tree_names(team):
        if name in seen:
            raise TeamError(f"the name {name!r} is used by two agents of the team tree")
        seen.add(name)


def tree_names(team: TeamSpec) -> list[str]:
    """Every agent and supervisor name in the team and its nested teams. A nested team whose
    supervisor bears the agent's name (what the builder makes) counts once."""
    names = [team.supervisor.name] if team.supervisor else []
    for name, agent in team.agents.items():
        if agent.team is None:
            names.append(name)
            continue
        sub = agent.team
        if sub.supervisor is None or sub.supervisor.name != name:
            names.append(name)
        names += tree_names(sub)
    return names


def _validate(team: TeamSpec, depth: int) -> None:
    for name, agent in team.agents.items():
        if agent.team is None and not agent.run_as_child:
            continue
        if team.supervisor is None:
            raise TeamError(f"agent {name!r} runs as a child workflow, which only a "
                            "supervisor's agents can do (this team is a swarm)")
        if agent.team is None:
            continue
        if agent.tools or agent.handoffs:
            raise TeamError(f"agent {name!r} is a nested team: give tools to its agents, not to it")
        if depth + 1 >= MAX_NESTING:
            raise TeamError(f"teams nest more than {MAX_NESTING} deep at {name!r}: is a team "
                            "inside itself?")
        try:
            _validate(agent.team, depth + 1)
        except TeamError as err:
            raise TeamError(f"in nested team {name!r}: {err}") from None
    for name, agent in team.agents.items():
        if name != agent.name:
            raise TeamError(f"agent registered as {name!r} is named {agent.name!r}")
        for tool in agent.tools:
            if tool not in team.tools and tool not in BUILTINS:
                raise TeamError(f"agent {name!r} names unknown tool {tool!r}")
        for peer in [*agent.handoffs, *agent.handoff_tool_names]:
            if peer not in team.agents:
                raise TeamError(f"agent {name!r} hands off to unknown agent {peer!r}")
    if team.supervisor is not None:
        sup = team.supervisor
        if sup.name in team.agents:
            raise TeamError(f"supervisor name {sup.name!r} is also an agent's name")
        for agent_name in sup.agents:
            if agent_name not in team.agents:
                raise TeamError(f"supervisor names unknown agent {agent_name!r}")
        for tool in sup.tools:
            if tool not in team.tools and tool not in BUILTINS:
                raise TeamError(f"supervisor names unknown tool {tool!r}")
        if sup.aggregate not in (None, CONCATENATE) and sup.aggregate not in team.tools:
            raise TeamError(f"aggregate names unknown tool {sup.aggregate!r} (use a tool of the "
                            f"team, or {CONCATENATE!r})")
        problems = routing.strategy_problems(team)
        if problems:
            raise TeamError("; ".join(problems))
    elif (team.start_agent or next(iter(team.agents), None)) not in team.agents:
        raise TeamError("a swarm needs at least one agent and a valid start_agent")
