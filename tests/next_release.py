"""A "next release" of TeamWorkflow, for tests/test_upgrades.py: the same workflow with one
change to the commands it issues (a short timer before the first turn), made the way the upgrade
policy in docs/deployment.md says (`Guarded`, behind `workflow.patched`) and the way it forbids (`Unguarded`).

Both register under the name "TeamWorkflow", as a new worker build would. Kept out of the test
module so the workflow sandbox imports nothing but this and the workflow package."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_teams.workflows.conversation import TeamWorkflow
    from durable_teams.workflows.state import ConversationInput, ConversationResult

PATCH_ID = "test-pause-before-first-turn"


@workflow.defn(name="TeamWorkflow")
class Guarded(TeamWorkflow):
    @workflow.run
    async def run(self, inp: ConversationInput | None = None, *extra: object) -> ConversationResult:
        # Conversations started by the previous release have no marker for this patch in their
        # history: `patched` is False for them and they keep the old commands.
        if workflow.patched(PATCH_ID):
            await workflow.sleep(timedelta(milliseconds=10), summary="new in this release")
        return await super().run(inp, *extra)


@workflow.defn(name="TeamWorkflow")
class Unguarded(TeamWorkflow):
    @workflow.run
    async def run(self, inp: ConversationInput | None = None, *extra: object) -> ConversationResult:
        await workflow.sleep(timedelta(milliseconds=10), summary="new in this release")
        return await super().run(inp, *extra)
