"""Hidden steps (workflows/hidden_steps.py), the workflow's generic primitive behind the
Responses door's `DELETE /v1/responses/{id}`: a state recorded under the field's first name
reads back, and a worker of the release before it (the update named `delete_response` only)
still has its steps hidden by this gateway."""

from __future__ import annotations

import uuid

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses.by_id import hide
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.state import ConversationState

pytestmark = pytest.mark.workflow


@workflow.defn(name="TeamWorkflow", sandboxed=False)
class EarlierRelease:
    """The release before `hide_step`: its one way to hide a step is `delete_response`."""

    def __init__(self) -> None:
        self.hidden: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: len(self.hidden) > 1)
        return self.hidden

    @workflow.update
    def delete_response(self, key: str) -> bool:
        if key in self.hidden:
            return False
        self.hidden.append(key)
        return True


def test_a_state_recorded_under_the_first_field_name_keeps_its_hidden_steps() -> None:
    """Continue-as-new carries the state through history; a run recorded before the rename
    wrote `deleted_responses`, and its marks must survive into `hidden_steps`."""
    state = ConversationState.model_validate({"deleted_responses": ["1_0_0", "2_5_1"]})
    assert state.hidden_steps == ["1_0_0", "2_5_1"]
    assert "hidden_steps" in state.model_dump(mode="json")  # written under the new name
    assert ConversationState().model_dump(mode="json").get("hidden_steps") is None  # left off while empty
    status = ConversationStatus.model_validate({  # an older worker's
        "active_agent": "a", "turns": 1, "model_calls": 0, "pending": [], "queued_turns": 0,
        "last_reply": None, "closed": False, "deleted_responses": ["1_0_0"]})
    assert status.hidden_steps == ["1_0_0"]


@pytest.mark.slow  # a worker of its own: over a second under load
async def test_a_worker_of_the_release_before_still_hides_steps(client: Client, task_queue: str) -> None:
    gateway = Gateway(client, task_queue)
    async with Worker(client, task_queue=task_queue, workflows=[EarlierRelease]):
        handle = await client.start_workflow("TeamWorkflow", id=f"old-{uuid.uuid4().hex[:8]}",
                                             task_queue=task_queue)
        ref = ResponseRef(handle.id, 1, 0, 0)
        first, again = await hide(gateway, ref), await hide(gateway, ref)
        await hide(gateway, ResponseRef(handle.id, 1, 4, 1))
        hidden = await handle.result()
    assert (first, again) == (True, False)
    assert hidden == ["1_0_0", "1_4_1"]
