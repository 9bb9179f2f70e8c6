"""A closed conversation's state, rebuilt by replaying its history in this process.

Why: a closed conversation's result does not carry its transcript (that would record every
message twice), and a query needs a worker.
Its history holds everything the workflow decided from (its input, every model and tool result),
so replaying it here with this package's workflow code rebuilds the same state, with no worker,
no model and no tool run. The replay runs without the sandbox: the state is read off the
workflow instance once its run has ended, through an interceptor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    Replayer,
    UnsandboxedWorkflowRunner,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.transcript import Transcript


class ReplayFailed(Exception):
    """The history did not replay with this code (another release's workflow, say)."""


class _Capture(Interceptor):
    """Keeps each replayed workflow instance as its run starts (`on_start` sees it first), so a
    history cut short (a running conversation, a checkpoint) still yields the state it reached."""

    def __init__(self, on_start: Callable[[Any], None] | None = None) -> None:
        self.instances: list[Any] = []
        self.on_start = on_start

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        instances, on_start = self.instances, self.on_start

        def seen() -> None:  # handlers may run before the run method does
            if not instances:
                instances.append(workflow.instance())
                if on_start is not None:
                    on_start(instances[-1])

        class Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                seen()
                return await super().execute_workflow(input)

            async def handle_signal(self, input: HandleSignalInput) -> None:
                seen()
                return await super().handle_signal(input)

            def handle_update_validator(self, input: HandleUpdateInput) -> None:
                seen()
                return super().handle_update_validator(input)

            async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
                seen()
                return await super().handle_update_handler(input)

        return Inbound


async def replayed_transcript(client: Client, workflow_id: str, full: bool) -> list[Message]:
    """The transcript (`full`: every agent's steps) of `workflow_id`'s latest run, as the
    `transcript` query would return it, read from its replayed history."""
    return (await _replayed(client, workflow_id)).transcript(full)


async def replayed_log(client: Client, workflow_id: str) -> Transcript:
    """The whole log (with its shared index) of `workflow_id`'s latest run, from its history."""
    return (await _replayed(client, workflow_id)).state.transcript


async def _replayed(client: Client, workflow_id: str) -> TeamWorkflow:
    return await replay_history(client, await client.get_workflow_handle(workflow_id).fetch_history())


async def replay_history(client: Client, history: WorkflowHistory,
                         on_start: Callable[[Any], None] | None = None) -> TeamWorkflow:
    """The workflow instance as `history` (whole, or cut after a workflow task) leaves it;
    `on_start(instance)` runs before the replayed run does (to watch its state change)."""
    # Its input decoded first: a history this client cannot read (encrypted under a key it
    # lacks) raises the codec's own readable error, not a replay failure logged as a traceback.
    started = history.events[0].workflow_execution_started_event_attributes
    await client.data_converter.decode(started.input.payloads)
    capture = _Capture(on_start)
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=client.data_converter,
                        workflow_runner=UnsandboxedWorkflowRunner(), interceptors=[capture])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    if result.replay_failure is not None or not capture.instances:
        why = str(result.replay_failure or "the workflow did not run").splitlines()[0]
        raise ReplayFailed(why)
    conversation: TeamWorkflow = capture.instances[0]
    return conversation
