"""Example teams the worker serves out of the box, with the scripts that replay them."""

from __future__ import annotations

from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.scripted import Step


def example_teams() -> list[CompiledTeam]:
    from durable_teams.examples import acme, faang, faang_teams, support

    return [faang.build().compile(), support.build().compile(), acme.build().compile(),
            faang_teams.build().compile()]


def example_script() -> dict[str, list[Step]]:
    """The recorded responses of every example team, keyed by agent (names are unique)."""
    from durable_teams.examples import acme, faang, faang_teams, support

    return {**faang.SCRIPT, **support.SCRIPT, **acme.SCRIPT, **faang_teams.SCRIPT}
