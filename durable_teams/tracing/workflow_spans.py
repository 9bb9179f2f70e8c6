"""`invoke_agent` and `handoff` spans for agent runs, which happen inside workflows.

A span must not be opened in one workflow task and closed in another (a replay, a cache
eviction or another worker would lose or duplicate it). So an agent run is a span made at
once when the run ends, outside replay, with the run's start and end in workflow time
(workflows/agent_spans.py). Its span id is fixed in advance, derived from the run's place in
the history, so while the run goes on, the activities and child workflows it schedules are
parented under it (Temporal's `StartActivity` spans, and so our `chat` and `execute_tool`
spans, nest in it) although the span itself is exported only at the end. The span is made
outside the sandbox, through an extern function, as Temporal's own workflow spans are.

As with Temporal's workflow spans, a workflow task that fails after a run ended and is retried
reports that run again (with the same span id).

Making a span with a chosen id needs the OpenTelemetry SDK's tracer (any SDK
`TracerProvider`); another tracer gets the span with an id of its own, and the run's children
then point to a parent that is not exported.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import temporalio.worker
import temporalio.workflow
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode

from durable_teams.workflows import agent_spans
from durable_teams.workflows.agent_spans import AgentRunRecord

EXTERN = "durable_teams_agent_span"


class _FixedSpanId:
    """An SDK id generator that hands out one given span id (trace ids: the parent's)."""

    def __init__(self, span_id: int, fallback: Any) -> None:
        self.span_id, self.fallback = span_id, fallback

    def generate_span_id(self) -> int:
        return self.span_id

    def generate_trace_id(self) -> int:
        return int(self.fallback.generate_trace_id())

    def is_trace_id_random(self) -> bool:
        return bool(self.fallback.is_trace_id_random())


def _with_span_id(tracer: trace.Tracer, span_id: int) -> trace.Tracer:
    """`tracer`, as a copy whose next span gets `span_id` (an SDK tracer; others as they are)."""
    # the global tracer before a provider was set: its provider's tracer, once there is one
    real = tracer._tracer if isinstance(tracer, trace.ProxyTracer) else tracer
    if not hasattr(real, "id_generator"):
        return real
    fixed = copy.copy(real)
    fixed.id_generator = _FixedSpanId(span_id, real.id_generator)  # type: ignore[attr-defined]
    return fixed


def emit_agent_run(tracer: trace.Tracer, parent: SpanContext, run: AgentRunRecord) -> None:
    """The run's `invoke_agent` span, and a zero-length `handoff` span per transfer it made."""
    context = trace.set_span_in_context(NonRecordingSpan(parent))
    span = _with_span_id(tracer, run.span_id).start_span(
        f"invoke_agent {run.agent}", context, kind=trace.SpanKind.INTERNAL,
        attributes=run.attributes, start_time=run.start_ns)
    if run.error is not None:
        span.set_attribute("error.type", run.error)
        span.set_status(Status(StatusCode.ERROR, run.error))
    inside = trace.set_span_in_context(span)
    for handoff in run.handoffs:
        tracer.start_span("handoff", inside, kind=trace.SpanKind.INTERNAL, start_time=run.end_ns, attributes={
            "gen_ai.agent.name": run.agent, "durable_teams.handoff.source_agent": run.agent,
            "durable_teams.handoff.target_agent": handoff.target, "gen_ai.tool.name": handoff.tool,
            "gen_ai.tool.call.id": handoff.call_id,
            "gen_ai.conversation.id": run.attributes.get("gen_ai.conversation.id", ""),
        }).end(end_time=run.end_ns)
    span.end(end_time=run.end_ns)


@contextmanager
def _parented_by_agent_run() -> Iterator[None]:
    """While scheduling: the current agent run's span as the current span, so Temporal's
    interceptor parents what it starts (and propagates in headers) under it."""
    span_id = agent_spans.CURRENT.get()
    parent = trace.get_current_span().get_span_context()
    if span_id is None or not parent.is_valid:
        yield
        return
    run = SpanContext(parent.trace_id, span_id, is_remote=False, trace_flags=parent.trace_flags,
                      trace_state=parent.trace_state)
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(run)))
    try:
        yield
    finally:
        otel_context.detach(token)


class _Outbound(temporalio.worker.WorkflowOutboundInterceptor):
    def start_activity(self, input: temporalio.worker.StartActivityInput) -> Any:
        with _parented_by_agent_run():
            return super().start_activity(input)

    def start_local_activity(self, input: temporalio.worker.StartLocalActivityInput) -> Any:
        with _parented_by_agent_run():
            return super().start_local_activity(input)

    async def start_child_workflow(self, input: temporalio.worker.StartChildWorkflowInput) -> Any:
        with _parented_by_agent_run():
            return await super().start_child_workflow(input)


class AgentRunSpans(temporalio.worker.WorkflowInboundInterceptor):
    """Inside the workflow (after Temporal's tracing interceptor, whose context it reads):
    gives workflow code a sink for finished agent runs, and parents scheduling under them."""

    def init(self, outbound: temporalio.worker.WorkflowOutboundInterceptor) -> None:
        super().init(_Outbound(outbound))

    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        agent_spans.SINK.set(self._sink)  # this task's context: the workflow's own code
        return await super().execute_workflow(input)

    async def handle_update_handler(self, input: temporalio.worker.HandleUpdateInput) -> Any:
        agent_spans.SINK.set(self._sink)
        return await super().handle_update_handler(input)

    def _sink(self, run: AgentRunRecord) -> None:
        parent = trace.get_current_span().get_span_context()
        if parent.is_valid:  # no trace to join (started without tracing): no span, as Temporal's
            temporalio.workflow.extern_functions()[EXTERN](parent, run)
