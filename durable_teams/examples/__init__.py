"""Example teams the worker serves out of the box, with the scripts that replay them."""

from __future__ import annotations

from collections.abc import Sequence

from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.scripted import AgentScript, ScriptStep


def example_teams() -> list[CompiledTeam]:
    from durable_teams.examples import acme, faang, faang_teams, support

    return [faang.build().compile(), support.build().compile(), acme.build().compile(),
            faang_teams.build().compile()]


def example_script() -> dict[str, Sequence[ScriptStep]]:
    """The recorded responses of every example team, keyed by agent (names are unique)."""
    from durable_teams.examples import acme, faang, faang_teams, support

    return {**faang.SCRIPT, **support.SCRIPT, **acme.SCRIPT, **faang_teams.SCRIPT}


def example_scripts() -> dict[str, AgentScript]:
    """The same responses by team (nested teams under their own names too), so a worker's
    scripted model answers an example team only, never a team of yours with an agent of the
    same name."""
    from durable_teams.examples import acme, faang, faang_teams, support
    from durable_teams.teams.team_tools import team_names

    scripts: dict[str, AgentScript] = {}
    for module in (faang, support, acme, faang_teams):
        for name in team_names(module.build().compile().spec):
            scripts[name] = module.SCRIPT
    return scripts
