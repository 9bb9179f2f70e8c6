"""What a replay runs the recorded conversations against: a team (changed, from a team module,
or as recorded), overrides (every agent's model, an agent's instructions) and a model backend
(a scripted one, or an OpenAI-compatible endpoint)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from durable_teams.activities.model import ModelBackend
from durable_teams.replay.records import Record
from durable_teams.teams.builders import CompiledTeam
from durable_teams.workflows.messages import TeamSpec


class CandidateError(ValueError):
    """A candidate that cannot replay a conversation (says which and why)."""


@dataclass
class Candidate:
    backend: ModelBackend
    teams: Sequence[CompiledTeam] = ()
    """Teams replacing the recorded ones of the same name; a team not here runs as recorded."""
    model: str | None = None
    """Every agent's (and supervisor's) model, when set."""
    instructions: dict[str, str] = field(default_factory=dict)
    """Agent (or supervisor) name -> its instructions in the candidate."""
    description: str = "the candidate"

    def spec_for(self, record: Record) -> TeamSpec:
        """The team `record`'s conversation runs with in the replay."""
        own = next((t.spec for t in self.teams if t.spec.name == record.team), None)
        if own is not None:
            spec = copy.deepcopy(own)
        elif record.spec is not None:
            try:
                spec = TypeAdapter(TeamSpec).validate_python(record.spec)
            except ValidationError as err:
                raise CandidateError(f"{record.workflow_id}: its recorded team does not load: "
                                     f"{str(err).splitlines()[0]}") from None
        else:
            raise CandidateError(f"{record.workflow_id}: its history does not hold its team "
                                 f"{record.team!r}; give it with --team")
        self._override(spec, record.workflow_id)
        return spec

    def _override(self, spec: TeamSpec, workflow_id: str) -> None:
        names = set(spec.agents) | ({spec.supervisor.name} if spec.supervisor else set())
        unknown = sorted(set(self.instructions) - names)
        if unknown:
            raise CandidateError(f"{workflow_id}: team {spec.name!r} has no agent {', '.join(unknown)} "
                                 f"(agents: {', '.join(sorted(names))})")
        if any(agent.mcp for agent in spec.agents.values()):
            raise CandidateError(f"{workflow_id}: team {spec.name!r} uses MCP servers, whose tools a replay "
                                 "does not serve from the record yet")
        for agent in spec.agents.values():
            agent.model = self.model or agent.model
            agent.instructions = self.instructions.get(agent.name, agent.instructions)
        if spec.supervisor is not None:
            spec.supervisor.model = self.model or spec.supervisor.model
            spec.supervisor.instructions = self.instructions.get(spec.supervisor.name, spec.supervisor.instructions)
