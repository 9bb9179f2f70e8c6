"""What a served team says about itself to other agents and assistants (an MCP tool's
description, an A2A agent card's skills): built from its agents, pure data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from durable_teams.workflows.messages import TeamSpec


@dataclass(frozen=True)
class Skill:
    """One agent of a team, as a skill: its name and what it does."""

    name: str
    description: str


@dataclass(frozen=True)
class TeamCard:
    name: str
    description: str
    skills: tuple[Skill, ...]


def card_of(spec: TeamSpec) -> TeamCard:
    """The team's card: a description naming its agents and what each does."""
    skills = tuple(Skill(name, agent.description or (agent.instructions or "")[:200])
                   for name, agent in spec.agents.items())
    shape = f"supervised by {spec.supervisor.name}" if spec.supervisor else "handing off to each other"
    listed = "; ".join(f"{s.name}: {s.description}" if s.description else s.name for s in skills)
    return TeamCard(spec.name, f"The {spec.name} team, agents {shape} ({listed}). Send it a message.", skills)


def descriptions(cards: Sequence[TeamCard]) -> dict[str, str]:
    return {card.name: card.description for card in cards}
