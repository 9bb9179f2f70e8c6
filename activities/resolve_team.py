"""The `resolve_team` activity: turn a team's registered name into its spec, once.

Lets the CLI and `temporal workflow start --input '{"team_name": "faang", ...}'` start a team
by name. The spec returned is recorded in history, so the running conversation keeps it even
if the worker's code changes later.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.messages import TeamSpec


class TeamActivities:
    def __init__(self, teams: dict[str, TeamSpec]):
        self.teams = teams

    @activity.defn(name="resolve_team")
    async def resolve_team(self, name: str) -> TeamSpec:
        try:
            return self.teams[name]
        except KeyError:
            known = ", ".join(sorted(self.teams)) or "none"
            raise ApplicationError(
                f"No team named {name!r} on this worker (known: {known}).",
                type="UnknownTeam",
                non_retryable=True,
            ) from None
