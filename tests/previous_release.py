"""The release before start-input checks, for tests/test_bad_input.py: TeamWorkflow accepting
any input that decodes (an empty task, say), as it did. Its own module so the workflow sandbox
imports nothing but this and the workflow package."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_teams.workflows.conversation import TeamWorkflow
    from durable_teams.workflows.state import ConversationInput, ConversationResult


@workflow.defn(name="TeamWorkflow")
class BeforeInputChecks(TeamWorkflow):
    start_generation = 0  # that release asked each patch on its own

    @workflow.init
    def __init__(self, inp: ConversationInput | None = None, *extra: object) -> None:
        super().__init__(inp, *extra)
        self.start_problem = None

    @workflow.run
    async def run(self, inp: ConversationInput | None = None, *extra: object) -> ConversationResult:
        return await super().run(inp, *extra)
