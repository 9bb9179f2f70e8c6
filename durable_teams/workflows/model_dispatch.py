"""Where and how a model call runs: the `call_model` activity, local (this worker, the view read
in process) when the policy asks for one, else regular, on the worker holding the conversation
when there is one to ask for (placement.py)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from .messages import ModelCalls, ModelRequest, ModelResponse
    from .model_calls import activity_options, local_activity_options
    from .placement import ModelPlacement, is_not_started


async def execute_model(request: ModelRequest, summary: str, policy: ModelCalls,
                        placement: ModelPlacement) -> ModelResponse:
    """Run `call_model`: a local activity (this worker, the view read in process) when the
    policy asks for one, else a regular one."""
    if policy.local:
        return await workflow.execute_local_activity(
            "call_model", request, result_type=ModelResponse, summary=summary,
            **local_activity_options(policy))
    return await _execute_model_activity(request, summary, policy, placement)


async def _execute_model_activity(request: ModelRequest, summary: str, policy: ModelCalls,
                                  placement: ModelPlacement) -> ModelResponse:
    """Run `call_model` as a regular activity, on the worker holding this workflow when
    there is one to ask for (workflows/placement.py); on the shared queue if that worker
    never takes it."""
    queue = await placement.next_queue()
    options = activity_options(policy)
    response: ModelResponse
    if queue is not None:
        try:
            response = await workflow.execute_activity(
                "call_model", request, result_type=ModelResponse, task_queue=queue,
                schedule_to_start_timeout=timedelta(seconds=policy.worker_queue_seconds),
                summary=summary, **options)
            placement.observe(queue, response.read_in_process)
            return response
        except ActivityError as err:
            if not is_not_started(err):
                raise
            placement.lost(queue)  # never started there: nothing is repeated here
    response = await workflow.execute_activity(
        "call_model", request, result_type=ModelResponse, summary=summary, **options)
    placement.observe(None, response.read_in_process)
    return response
