"""A team whose tool writes to its stream writer (durable_teams/teams/stream_writer.py): two
progress items, then its result; its script, and a supervisor team with it on a worker."""

from __future__ import annotations

from durable_teams import get_stream_writer, tool
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor, Swarm
from durable_teams.worker.scripted import call, say

PROGRESS = [{"progress": 50, "step": "half way"}, {"progress": 100, "step": "done"}]


@tool
def crunch(n: int) -> str:
    """Crunch n numbers, telling the stream how far it got."""
    writer = get_stream_writer()
    for item in PROGRESS:
        writer(item)
    return f"crunched {n}"


def progress_team() -> CompiledTeam:
    """A swarm of one agent: its tool messages are in the shared conversation."""
    return Swarm([Agent("cruncher", "Crunch numbers.", tools=[crunch])], name="crunching").compile()


SCRIPT = {"cruncher": [call("crunch", n=3), say("All crunched.")]}


def desk_team() -> CompiledTeam:
    """The cruncher as a supervisor's worker: its tool messages stay private (last_message)."""
    return Supervisor([Agent("cruncher", "Crunch numbers.", tools=[crunch])], name="desk").compile()


DESK_SCRIPT = {"supervisor": [call("transfer_to_cruncher"), say("The cruncher is done.")], **SCRIPT}
