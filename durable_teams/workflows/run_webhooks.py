"""A LangGraph run's webhook (the LangGraph door's `webhook=` on a run,
durable_teams/gateway/doors/langgraph/langgraph_webhooks.py): a workflow per run that watches the
run's turn with the A2A push's activity (`watch_a2a_task`) until the run ends (answered,
failed, cancelled, or waiting for a person) and POSTs the run to the URL with the A2A push's
delivery (`deliver_a2a_push`): at least once, retried with backoff, to a public address only
unless the operator allowed others. A delivery given up ends the workflow with the reason."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from .a2a_push import Delivery, PushConfig, TaskChange, WatchRequest
from .wire_base import Wire, left_out_when_unset

RUN_ENDS = {"COMPLETED": "success", "FAILED": "error", "CANCELED": "interrupted", "REJECTED": "error",
            "INPUT_REQUIRED": "interrupted"}
"""A turn's states that end a run, as LangGraph's run statuses."""


class WebhookInput(Wire):
    thread: str
    turn: int
    run_id: str
    assistant_id: str
    url: str
    allow_private: bool = False
    retry_seconds: float = 1.0
    attempts: int = 8
    poll_seconds: float = 1.0
    watch_seconds: float = 300.0
    shown_thread: str | None = left_out_when_unset()
    """The thread's id as the run's caller knows it (a tenant's: its workflow id without the
    tenant's prefix, gateway/doors/langgraph/langgraph_tenancy.py); None: `thread`."""
    last: str | None = left_out_when_unset()
    """Where the watch starts: a cursor (`push_targets.from_the_start`) follows the
    conversation's history from there, so an interrupt answered at once still ends the run;
    None reads the turn's state now and then (a run resumed, and workflows of earlier releases)."""


@workflow.defn
class RunWebhookWorkflow:
    @workflow.run
    async def run(self, inp: WebhookInput) -> str:
        """The run's status delivered, or why the delivery was given up."""
        while True:
            change: TaskChange = await workflow.execute_activity(
                "watch_a2a_task", WatchRequest(thread=inp.thread, turn=inp.turn, last=inp.last or "",
                                               poll_seconds=inp.poll_seconds, watch_seconds=inp.watch_seconds),
                result_type=TaskChange, start_to_close_timeout=timedelta(seconds=inp.watch_seconds + 60),
                heartbeat_timeout=timedelta(seconds=max(30.0, inp.poll_seconds * 10)),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1)),
                summary="watch the LangGraph run")
            if change.state in RUN_ENDS:
                break
            if workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(inp)
        status = RUN_ENDS[change.state]
        event: dict[str, object] = {"run_id": inp.run_id, "thread_id": inp.shown_thread or inp.thread, "assistant_id": inp.assistant_id,
                                    "status": status, "metadata": {}, "multitask_strategy": "reject"}
        if status == "error":
            event["error"] = "the run failed"
        try:
            await workflow.execute_activity(
                "deliver_a2a_push", Delivery(config=PushConfig(id="webhook", url=inp.url), event=event,
                                             allow_private=inp.allow_private),
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=inp.retry_seconds), backoff_coefficient=2.0,
                                         maximum_interval=timedelta(minutes=5), maximum_attempts=inp.attempts,
                                         non_retryable_error_types=["PushRefused"]),
                summary="deliver the LangGraph run's webhook")
        except ActivityError as err:
            return f"given up: {getattr(err.cause, 'message', None) or err.cause or err}"[:300]
        return f"delivered: {status}"
