"""Defining a team in Python: agents, a supervisor or a swarm, compiled to data.

    research = Agent("research_expert", "You are a world class researcher.", tools=[web_search])
    math = Agent("math_expert", "You are a math expert.", tools=[add, multiply])
    team = Supervisor([research, math], instructions="You manage a research and a math expert.")

`compile()` turns the definition into a `TeamSpec` (pydantic, travels as workflow input) and a
`ToolRegistry` (the Python callables, which stay on the worker).

Teams nest: a `Supervisor` (named, with a description) can be one of another supervisor's
agents; it runs as a child workflow, and its tools join the top team's registry so one worker
serves every level:

    research_team = Supervisor([research], name="research_team", description="Finds facts.")
    top = Supervisor([research_team, math_team], name="top")

A builder has one name: the team's (`name=`), which a worker serves it under and a supervisor
above it hands off to. The supervisor agent's own name on its messages is `supervisor_name`
(langgraph-supervisor's option; default "supervisor", in a nested team the team's name).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from durable_teams.teams.builder_checks import (
    check_agent,
    check_intent_arguments,
    check_members,
    check_supervisor_options,
)
from durable_teams.teams.mcp_servers import MCPServer
from durable_teams.teams.tools import Tool, ToolRegistry, tool
from durable_teams.workflows.builtins import BUILTINS
from durable_teams.workflows.definition_checks import TeamError, check_definition, validate_team
from durable_teams.workflows.messages import AgentSpec, SupervisorSpec, TeamSpec
from durable_teams.workflows.options import (
    AgentOptions,
    ModelApi,
    SupervisorOptions,
    TeamOptions,
    option_values,
)

ToolLike = Callable[..., Any] | Tool | str
"""A function, a `@tool`, or the name of a built-in tool such as "ask_human"."""


DEFAULT_SUPERVISOR = "supervisor"


def default_model() -> str:
    return os.environ.get("DURABLE_TEAMS_MODEL", "gpt-4o-mini")


MODEL_API_ENV = "DURABLE_TEAMS_MODEL_API"


def default_api() -> ModelApi | None:
    """`$DURABLE_TEAMS_MODEL_API` ("responses" or "chat_completions"): the API of teams that
    name none, as $DURABLE_TEAMS_MODEL names their model (so the example teams can run on a
    model served only through the Responses API). Unset: None (Chat Completions)."""
    value = os.environ.get(MODEL_API_ENV, "").strip().lower()
    if not value:
        return None
    if value not in ("responses", "chat_completions"):
        raise TeamError(f"{MODEL_API_ENV} must be responses or chat_completions, not {value!r}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class Handoff:
    """A peer handoff with its own tool name or description."""

    agent: str
    tool_name: str | None = None
    description: str = ""


def handoff(agent: Agent | str, tool_name: str | None = None, *, description: str = "") -> Handoff:
    """A handoff to `agent` under `tool_name` (default `transfer_to_<agent>`), described to the
    model by `description`: when to use it, as the Swarm cookbook's `transfer_back_to_triage`
    says "Call this if the user brings up a topic outside of your purview". Without one the
    tool is described by the target agent's `description`."""
    return Handoff(agent if isinstance(agent, str) else agent.name, tool_name, description)


@dataclass
class Agent(AgentOptions):
    """A worker agent: a name, instructions, a model and tools. Its other options
    (`description`, `skills`, `run_as_child`, `temperature`) are keyword-only."""

    name: str
    instructions: str = ""
    """A string, or a template with `{date}`, `{datetime}`, `{agent_name}`, `{supervisor_name}`
    and `{context[key]}` placeholders, filled at each model call."""
    tools: Sequence[ToolLike] = ()
    model: str | None = None
    """The model's name (default: $DURABLE_TEAMS_MODEL, else gpt-4o-mini)."""
    handoffs: Sequence[Agent | str | Handoff] = ()
    """Peers this agent may hand the conversation to (swarm style): `transfer_to_<peer>`
    tools, or `handoff(peer, "transfer_back_to_triage", description=...)` for a name and a
    description of your own."""
    output_type: type[BaseModel] | None = None
    """A pydantic model for a structured final answer (sent as a JSON schema)."""
    mcp: Sequence[MCPServer] = ()
    """MCP servers whose tools this agent uses (`MCPStdio`, `MCPHttp`, durable_teams/teams/mcp_servers.py)."""

    def __post_init__(self) -> None:
        check_agent(self)

    def spec(self, registry: ToolRegistry) -> AgentSpec:
        registry.add_mcp(*self.mcp)
        return AgentSpec(
            **option_values(self, AgentOptions),
            name=self.name,
            instructions=self.instructions,
            model=self.model or default_model(),
            tools=_register(registry, self.tools),
            handoffs=[_peer(h) for h in self.handoffs],
            handoff_tool_names={h.agent: h.tool_name for h in self.handoffs
                                if isinstance(h, Handoff) and h.tool_name},
            handoff_descriptions={h.agent: h.description for h in self.handoffs
                                  if isinstance(h, Handoff) and h.description},
            output_schema=self.output_type.model_json_schema() if self.output_type else None,
            mcp=[server.spec() for server in self.mcp],
        )


@dataclass
class CompiledTeam:
    """A team as data plus the callables its tools need on the worker."""

    spec: TeamSpec
    tools: ToolRegistry


@dataclass
class Supervisor(SupervisorOptions, TeamOptions):
    """A supervisor routing work to agents through `transfer_to_<agent>` tools, with
    langgraph-supervisor's options (keyword-only, documented on each field)."""

    agents: Sequence[Agent | Supervisor | CompiledTeam]
    """Worker agents, or whole teams (a `Supervisor`, compiled or not) nested as agents."""
    instructions: str = ""
    name: str = "team"
    """The team's name: a worker serves it under this name (`durable-teams run <name> ...`), and
    a supervisor above it (when the team is nested) hands off to it as `transfer_to_<name>`."""
    description: str = ""
    """What this team does, for a supervisor above it (when the team is nested)."""
    model: str | None = None
    tools: Sequence[ToolLike] = ()
    add_handoff_back_messages: bool | None = None
    """Whether a worker's hand-back pair ("Transferring back to supervisor" and its tool
    message) is added when it finishes; defaults to `add_handoff_messages`, as in
    langgraph-supervisor."""
    fallback_agent: Agent | Supervisor | str | None = None
    """Where "rules" and "skills" route when nothing matches (default: the first agent)."""
    supervisor_name: str | None = field(default=None, kw_only=True)
    """The supervisor agent's name on its messages and in `{supervisor_name}` (as in
    langgraph-supervisor's `create_supervisor(supervisor_name=...)`). Default: "supervisor";
    in a nested team, the team's name (agent names are unique across a team tree)."""
    aggregate: ToolLike | None = None
    """How fanned-out answers become the final answer: None (the supervisor's next model call),
    "concatenate", or a function `(results: list[dict]) -> str` (each {"agent", "answer"})."""

    def __post_init__(self) -> None:
        check_members(f"team {self.name!r}", [_name(a) for a in self.agents])
        check_supervisor_options(self)
        self.compile()  # a team that cannot run fails here, where it is defined

    def compile(self) -> CompiledTeam:
        registry = ToolRegistry()
        spec = self.team_spec(registry)
        validate_team(spec)
        check_definition(spec)
        check_intent_arguments(spec, registry)
        return CompiledTeam(spec, registry)

    def team_spec(self, registry: ToolRegistry, _within: tuple[int, ...] = ()) -> TeamSpec:
        """The team as data; every tool, nested teams' included, goes into `registry`."""
        if id(self) in _within:
            raise TeamError(f"team {self.name!r} is placed inside its own team")
        within = (*_within, id(self))
        names = [_name(a) for a in self.agents]
        for name in names:
            if names.count(name) > 1:
                raise TeamError(f"team {self.name!r} has two agents named {name!r}")
        own = ToolRegistry()  # this team's tools (its nested teams' included), then the caller's
        aggregate = self.aggregate
        if aggregate is not None and aggregate != "concatenate":
            aggregate = _register(own, [aggregate])[0]
        back = self.add_handoff_messages if self.add_handoff_back_messages is None else self.add_handoff_back_messages
        spec = TeamSpec(
            **option_values(self, TeamOptions),
            name=self.name,
            supervisor=SupervisorSpec(
                **option_values(self, SupervisorOptions),
                name=self.supervisor_name or (self.name if _within else DEFAULT_SUPERVISOR),
                instructions=self.instructions,
                model=self.model or default_model(),
                agents=names,
                tools=_register(own, self.tools),
                add_handoff_back_messages=back,
                fallback_agent=(self.fallback_agent if self.fallback_agent is None
                                else _name(self.fallback_agent)),
                aggregate=aggregate,  # type: ignore[arg-type]
            ),
            agents={_name(a): _member(a, own, within) for a in self.agents},
            tools=own.specs(),
        )
        spec.api = spec.api or default_api()
        registry.merge(own)
        return spec


@dataclass
class Swarm(TeamOptions):
    """Agents that hand the conversation to each other as peers; the active agent stays
    active for the next user turn."""

    agents: Sequence[Agent]
    start_agent: str | None = None
    """The agent that takes the first turn (default: the first agent)."""
    name: str = "swarm"
    """The team's name: a worker serves it under this name (`durable-teams run <name> ...`)."""
    def __post_init__(self) -> None:
        check_members(f"swarm {self.name!r}", [a.name for a in self.agents])
        self.compile()  # a team that cannot run fails here, where it is defined

    def compile(self) -> CompiledTeam:
        registry = ToolRegistry()
        spec = TeamSpec(
            **option_values(self, TeamOptions),
            name=self.name,
            agents={a.name: a.spec(registry) for a in self.agents},
            tools={},
            start_agent=self.start_agent or self.agents[0].name,
        )
        spec.api = spec.api or default_api()
        spec.tools = registry.specs()
        validate_team(spec)
        check_definition(spec)
        check_intent_arguments(spec, registry)
        return CompiledTeam(spec, registry)


def _name(item: Agent | Supervisor | CompiledTeam | str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, CompiledTeam):
        return item.spec.name
    return item.name


def _member(item: Agent | Supervisor | CompiledTeam, registry: ToolRegistry,
            within: tuple[int, ...]) -> AgentSpec:
    """A supervisor's agent as data: a worker, or a nested team (which runs as a child)."""
    if isinstance(item, Agent):
        return item.spec(registry)
    if isinstance(item, CompiledTeam):
        registry.merge(item.tools)
        team, sup = item.spec, item.spec.supervisor
        if sup is not None and sup.name == DEFAULT_SUPERVISOR:  # nested: named as its team
            team = replace(team, supervisor=replace(sup, name=team.name))
        return AgentSpec(name=team.name, team=team, model=sup.model if sup else default_model())
    return AgentSpec(name=item.name, description=item.description,
                     model=item.model or default_model(), team=item.team_spec(registry, within))


def _peer(item: Agent | str | Handoff) -> str:
    if isinstance(item, Handoff):
        return item.agent
    return item if isinstance(item, str) else item.name


def _register(registry: ToolRegistry, tools: Sequence[ToolLike]) -> list[str]:
    names = []
    for item in tools:
        if isinstance(item, str):
            if item not in BUILTINS and item not in registry:
                raise TeamError(f"unknown built-in tool {item!r}; built-ins: {sorted(BUILTINS)}")
            names.append(item)
            continue
        t = item if isinstance(item, Tool) else tool(item)
        registry.register(t)
        names.append(t.spec.name)
    return names
