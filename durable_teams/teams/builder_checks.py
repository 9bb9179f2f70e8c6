"""Checks run when an `Agent`, `Supervisor` or `Swarm` is constructed, before any spec is built:
a definition that cannot run raises `TeamError` on the line that defines it.

The checks of a whole compiled team (wire names, handoff collisions, shadowed tools, numeric
options) live in `durable_teams.workflows.definition_checks`, which `compile()` runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from durable_teams.teams.tool_schema import ToolArgumentsError, validate_arguments
from durable_teams.teams.tools import Tool, ToolRegistry, tool
from durable_teams.workflows.definition_checks import (
    TeamError,
    agent_name_problem,
    at_least,
    raise_first,
)
from durable_teams.workflows.messages import TeamSpec


class AgentDefinition(Protocol):
    """What `check_agent` reads of an `Agent` (typed here, so this module needs no builders)."""

    @property
    def name(self) -> Any: ...
    @property
    def temperature(self) -> Any: ...
    @property
    def tools(self) -> Sequence[Any]: ...


class SupervisorDefinition(Protocol):
    """What `check_supervisor_options` reads of a `Supervisor`."""

    @property
    def name(self) -> str: ...
    @property
    def max_parallel_handoffs(self) -> int: ...
    @property
    def decision_max_retries(self) -> int: ...
    @property
    def decision_max_tool_rounds(self) -> int: ...


def check_agent(agent: AgentDefinition) -> None:
    """The agent's name, its temperature, and every tool it is given as a function."""
    if not isinstance(agent.name, str):
        raise TeamError(f"an agent's name must be a string, got {agent.name!r}")
    raise_first([agent_name_problem(agent.name)])
    t = agent.temperature
    if t is not None and not (isinstance(t, int | float) and not isinstance(t, bool) and 0 <= t <= 2):
        raise TeamError(f"agent {agent.name!r}: temperature must be between 0 and 2, got {t!r}")
    for item in agent.tools:
        _check_tool(agent.name, item)


def _check_tool(owner: str, item: Any) -> None:
    if isinstance(item, str | Tool):
        return
    if not callable(item):
        raise TeamError(f"agent {owner!r} is given {item!r} as a tool: pass a function, a @tool "
                        "or the name of a built-in tool")
    tool(item)  # the decorator's checks: name, signature, options


def check_members(owner: str, names: Sequence[str]) -> None:
    """A team needs agents, each under its own name."""
    if not names:
        raise TeamError(f"{owner} has no agents")
    for name in names:
        if names.count(name) > 1:
            raise TeamError(f"{owner} has two agents named {name!r}")


def check_supervisor_options(sup: SupervisorDefinition) -> None:
    """Numeric options checked before the spec is built (pydantic would raise a less helpful
    ValidationError for some of them)."""
    owner = f"team {sup.name!r}"
    raise_first([
        at_least(owner, "max_parallel_handoffs", sup.max_parallel_handoffs, 1),
        at_least(owner, "decision_max_retries", sup.decision_max_retries, 0),
        at_least(owner, "decision_max_tool_rounds", sup.decision_max_tool_rounds, 0),
    ])


def check_intent_arguments(spec: TeamSpec, registry: ToolRegistry) -> None:
    """Every intent that calls a tool of ours calls it with arguments its parameters take, as a
    model's call is checked (a missing required one, an unknown or injected one, a wrong type):
    TeamError here, naming the intent and the field, not `Invalid arguments` at run time."""
    owners = [("the team", spec.intents)] + [(f"agent {n!r}", a.intents) for n, a in spec.agents.items()]
    for owner, intents in owners:
        for intent in intents:
            if intent.tool is None or intent.tool not in registry:  # an MCP server's: checked there
                continue
            try:
                validate_arguments(registry.get(intent.tool).fn, json.dumps(intent.arguments, default=str),
                                   tool_name=intent.tool)
            except ToolArgumentsError as err:
                raise TeamError(f"team {spec.name!r}: the intent of {owner} for {intent.phrases[0]!r} "
                                f"calls {intent.tool!r} with arguments it does not take: {err}") from None
    for agent in spec.agents.values():
        if agent.team is not None:
            check_intent_arguments(agent.team, registry)
