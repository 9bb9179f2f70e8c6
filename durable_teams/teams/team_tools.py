"""The tools of every team a worker serves, by team: two teams may each have a tool of one name
(`add` in the README's team and in the FAANG example), and each team's calls run its own.

A tool call names its team (`ToolRequest.team`: the team whose conversation made it, a nested
team under its own name). A call recorded before requests carried the team is found by name
alone, which works whenever the name is not ambiguous on this worker.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.messages import TeamSpec

from .tools import Tool, ToolRegistry

__all__ = ["ToolsByTeam", "owners", "team_names"]


class _Compiled(Protocol):  # builders.CompiledTeam, without importing the builders here
    @property
    def spec(self) -> TeamSpec: ...

    @property
    def tools(self) -> ToolRegistry: ...


def team_names(spec: TeamSpec) -> Iterator[str]:
    """The team's name and every nested team's, depth first."""
    yield spec.name
    for agent in spec.agents.values():
        if agent.team is not None:
            yield from team_names(agent.team)


def owners(team: str) -> Iterator[str]:
    """`team`, then the teams it runs inside: an agent marked `run_as_child` runs as a child
    team named `<team>/<agent>` (workflows/children.py), with its parent's tools."""
    yield team
    while "/" in team:
        team = team.rsplit("/", 1)[0]
        yield team


class ToolsByTeam:
    """Each served team's `ToolRegistry` under its name and its nested teams' names."""

    def __init__(self) -> None:
        self.by_team: dict[str, ToolRegistry] = {}
        self.by_name: dict[str, list[Tool]] = {}
        """Every tool by its name alone (for calls that name no team): one per distinct function."""

    @classmethod
    def of(cls, teams: Sequence[_Compiled]) -> ToolsByTeam:
        found = cls()
        for team in teams:
            found.add(team.spec, team.tools)
        return found

    @classmethod
    def single(cls, registry: ToolRegistry) -> ToolsByTeam:
        """Every call, whatever team it names, runs from `registry` (a worker of one tool set)."""
        found = cls()
        found.fallback = registry
        for name in registry.names():
            found.by_name[name] = [registry.get(name)]
        return found

    fallback: ToolRegistry | None = None

    def add(self, spec: TeamSpec, registry: ToolRegistry) -> None:
        """Serve `registry` for the team `spec` and its nested teams. A nested team of one name
        inside two served teams must have the same tools in both (a TeamError says which)."""
        for name in team_names(spec):
            existing = self.by_team.get(name)
            if existing is None or existing is registry:
                self.by_team[name] = registry
                continue
            merged = ToolRegistry()
            try:
                merged.merge(existing)
                merged.merge(registry)
            except TeamError as err:
                raise TeamError(f"two served teams contain a team named {name!r} with different "
                                f"tools ({err}): rename one") from None
            self.by_team[name] = merged
        for name in registry.names():
            tools = self.by_name.setdefault(name, [])
            if not any(t.fn is registry.get(name).fn for t in tools):
                tools.append(registry.get(name))

    def find(self, team: str | None, name: str) -> Tool | str:
        """The tool `name` of `team`, or why there is none (a sentence for the error message)."""
        registry = self.fallback
        if registry is None and team is not None:
            registry = next((self.by_team[t] for t in owners(team) if t in self.by_team), None)
        if registry is not None:
            if name in registry:
                return registry.get(name)
            return f"unknown tool {name!r} of team {team!r} on the worker that took this call. " \
                   f"Available: {', '.join(registry.names()) or 'none'}."
        if team is not None:
            return (f"unknown team {team!r} on the worker that took this call (tool {name!r}). "
                    f"Teams: {', '.join(sorted(self.by_team)) or 'none'}.")
        found = self.by_name.get(name, [])
        if len(found) == 1:
            return found[0]
        if found:
            return (f"tool {name!r} is ambiguous on the worker that took this call: {len(found)} "
                    "teams here have a tool of that name, and the call (recorded before calls named "
                    "their team) does not say which.")
        return (f"unknown tool {name!r} on the worker that took this call. "
                f"Available: {', '.join(sorted(self.by_name)) or 'none'}.")
