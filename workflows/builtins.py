"""Built-in tools answered inside the workflow from its own state and clock. Pure.

`current_datetime` reads the workflow's clock (`workflow.now()`, passed in as `now`), never the
wall clock, so a replay gives the same answer; `list_tools` and `list_agents` read the team.
"""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .messages import TeamSpec, ToolSpec

LIST_TOOLS = "list_tools"
LIST_AGENTS = "list_agents"
CURRENT_DATETIME = "current_datetime"


def current_datetime_spec() -> ToolSpec:
    return ToolSpec(
        name=CURRENT_DATETIME,
        description="The current date and time in a timezone (IANA name, default UTC).",
        parameters={
            "type": "object",
            "properties": {
                "timezone": {"type": "string", "description": "e.g. Europe/Paris, America/New_York"}
            },
        },
    )


def current_datetime(now: datetime, arguments: str) -> str:
    """`now` in the timezone the call names: ISO 8601 with the weekday, or a readable error."""
    try:
        args = json.loads(arguments or "{}")
        zone = str(args.get("timezone") or "UTC") if isinstance(args, dict) else ""
    except ValueError:
        zone = ""
    if not zone:
        return 'Error: current_datetime takes {"timezone": "<IANA name>"}.'
    try:
        local = now.astimezone(ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        return f"Error: unknown timezone {zone!r}. Use an IANA name such as Europe/Paris."
    return f"{local.isoformat(timespec='seconds')} ({local.strftime('%A')}, {zone})"


def list_tools(tools: list[ToolSpec]) -> str:
    return "\n".join(f"{t.name}: {t.description}" for t in tools) or "No tools."


def list_agents(team: TeamSpec) -> str:
    lines = [f"{a.name}: {a.description or ', '.join(a.skills) or 'no description'}"
             for a in team.agents.values()]
    return "\n".join(lines)
