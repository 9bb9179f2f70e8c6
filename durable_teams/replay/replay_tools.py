"""The tool activities of a replay's worker: each call is served as its conversation's
`ToolBook` decides (the recorded result, a real run, or a marked stand-in), never from the
production memory store or tool cache: the replay's tools get a store of their own, in memory."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import activity

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.memory.memory_backends import InMemoryStore
from durable_teams.replay.tool_book import ToolBook
from durable_teams.teams.builders import CompiledTeam
from durable_teams.teams.team_tools import ToolsByTeam
from durable_teams.workflows.messages import ToolRequest, ToolResult

NO_RECORD = "[replay] {tool} was not run: this conversation is not one the replay is driving."


def conversation_of(workflow_id: str) -> str:
    """The replayed conversation a workflow belongs to: a nested team's child runs under
    `<conversation>/<team>-<n>` (workflows/children.py)."""
    return workflow_id.split("/", 1)[0]


class ReplayTools(ToolActivities):
    """`run_tool` and `run_local_tool` for a replay: `books` (conversation workflow id ->
    its `ToolBook`) decide; only a call decided "live" reaches the tool's function."""

    def __init__(self, teams: Sequence[CompiledTeam], books: dict[str, ToolBook]) -> None:
        super().__init__(ToolsByTeam.of(teams), store=InMemoryStore())
        self.books = books

    def idempotent(self, req: ToolRequest) -> bool:
        found = self.tools.find(req.team, req.tool)
        return not isinstance(found, str) and found.spec.idempotent

    async def _run(self, req: ToolRequest) -> ToolResult:
        book = self.books.get(conversation_of(activity.info().workflow_id or ""))
        if book is None:
            return ToolResult(is_error=True, content=NO_RECORD.format(tool=req.tool))
        decision = book.decide(req.tool, req.arguments, self.idempotent(req))
        if decision.served == "live":
            return await super()._run(req)
        run = decision.recorded  # what else the recorded result carried goes back with it
        return ToolResult(content=decision.content, is_error=decision.is_error,
                          context_updates=run.context_updates if run else {}, handoff_to=run.handoff_to if run else None)
