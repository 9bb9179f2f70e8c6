"""The `resolve_team` activity: turn a team's registered name into its spec, once.

Lets the CLI and `temporal workflow start --input '{"team_name": "faang", ...}'` start a team
by name. The spec returned is recorded in history, so the running conversation keeps it even
if the worker's code changes later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.messages import TeamSpec

NoteOnUnknown = Callable[[], Awaitable[str]]
"""Called in the activity when a team or tool is unknown here: a sentence on the likely cause, or
"" (the worker's: durable_teams/worker/team_sets.py `mixed_queue_note`)."""


async def no_note() -> str:
    return ""


class TeamActivities:
    def __init__(self, teams: dict[str, TeamSpec], note_on_unknown: NoteOnUnknown = no_note):
        self.teams = teams
        self.note_on_unknown = note_on_unknown

    @activity.defn(name="resolve_team")
    async def resolve_team(self, name: str) -> TeamSpec:
        try:
            return self.teams[name]
        except KeyError:
            known = ", ".join(sorted(self.teams)) or "none"
            note = await self.note_on_unknown()
            raise ApplicationError(
                f"No team named {name!r} on this worker (known: {known}).{note}",
                type="UnknownTeam",
                non_retryable=True,
            ) from None
