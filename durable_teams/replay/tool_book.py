"""Which result a tool call gets during a replay (pure).

A call with the same tool and arguments as one in the record gets the recorded result (the
tool does not run). Any other call runs for real only when the tool is declared idempotent and
live tools were allowed; otherwise it gets a marked stand-in and is listed. A tool that is not
idempotent (a refund, an order) therefore never runs during a replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_teams.replay.records import Record, Served, ToolRun, canonical_arguments

STAND_IN = "[replay stand-in] {tool} was not run during this replay: {why}."


@dataclass(frozen=True)
class ToolDecision:
    served: Served
    content: str = ""
    """The result to return ("recorded", "stand-in"); empty for "live" (the tool's own)."""
    is_error: bool = False
    recorded: ToolRun | None = None
    """The recorded run whose result is served ("recorded")."""


@dataclass
class ToolBook:
    """One conversation's recorded tool results, and how each of the replay's calls was served."""

    record: Record
    allow_live: bool = False
    served: list[tuple[str, str, Served]] = field(default_factory=list)
    """Each call of the replay, in order: (tool, canonical arguments, how it was served)."""

    def __post_init__(self) -> None:
        self.results: dict[tuple[str, str], list[ToolRun]] = {}
        for run in self.record.tool_runs:
            self.results.setdefault(run.key, []).append(run)

    def decide(self, tool: str, arguments: str, idempotent: bool) -> ToolDecision:
        key = (tool, canonical_arguments(arguments))
        runs = self.results.get(key)
        if runs:  # the same call again reuses the last recorded result
            run = runs.pop(0) if len(runs) > 1 else runs[0]
            decision = ToolDecision("recorded", run.result, run.is_error, run)
        elif idempotent and self.allow_live:
            decision = ToolDecision("live")
        else:
            why = ("the record has no call with these arguments, and "
                   + ("it is not declared idempotent" if not idempotent
                      else "live tools were not allowed (--allow-live-tools)"))
            decision = ToolDecision("stand-in", STAND_IN.format(tool=tool, why=why), is_error=True)
        self.served.append((*key, decision.served))
        return decision

    def mark(self, after: Record) -> None:
        """Mark each tool run of the replay's record with how it was served."""
        left = list(self.served)
        for run in after.tool_runs:
            found = next((entry for entry in left if entry[:2] == run.key), None)
            if found is not None:
                left.remove(found)
                run.served = found[2]

    def real_runs(self) -> dict[str, int]:
        """Tool name -> how many times it ran for real during the replay."""
        counts: dict[str, int] = {}
        for tool, _, served in self.served:
            counts[tool] = counts.get(tool, 0) + (served == "live")
        return counts
