"""Rewind a conversation to its start, on the same thread: for one that began empty (no task,
no history, not a fork), the state before its first turn is the end of its first workflow
task, and a Temporal reset there leaves it as it was made, waiting for a first turn (as
`time_travel.rewind` does for the turns after it). The abandoned branch stays readable as an
earlier run of the same workflow id."""

from __future__ import annotations

import uuid

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, ResetReapplyExcludeType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHistory

from durable_teams.client.checkpoints import CheckpointError, runs
from durable_teams.client.replay_state import replay_history


async def first_step(client: Client, workflow_id: str) -> tuple[str, int]:
    """The run (its id on the server) and the event that ended the first workflow task of a
    conversation that began empty and took no turn in that task; else a `CheckpointError`."""
    run_id, history = (await runs(client, workflow_id))[0]
    done = next((e.event_id for e in history.events
                 if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), None)
    if done is None:
        raise CheckpointError(f"thread {workflow_id} has not taken its first step yet")
    instance = await replay_history(client, WorkflowHistory(workflow_id, [
        e for e in history.events if e.event_id <= done]))
    began_empty = instance.input.task is None and instance.input.state is None and not instance.input.history
    if not began_empty or instance.state.turns_started or instance.state.queue:
        raise CheckpointError(f"thread {workflow_id} did not begin empty (a first message, a history or a "
                              "fork's state): there is no start before its first turn to rewind to")
    return run_id, done


async def rewind_to_start(client: Client, workflow_id: str, reason: str = "") -> str:
    """Continue thread `workflow_id` from its start (`first_step`). Returns the new run's id."""
    run_id, done = await first_step(client, workflow_id)
    response = await client.workflow_service.reset_workflow_execution(ResetWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        reason=reason or "durable-teams rewind to the start", workflow_task_finish_event_id=done,
        request_id=uuid.uuid4().hex,
        reset_reapply_exclude_types=[ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
                                     ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE]))
    return str(response.run_id)
