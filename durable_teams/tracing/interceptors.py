"""OpenTelemetry traces and metrics of conversations (`pip install 'durable-teams[otel]'`).

    client = await connect(address, tracing=True)     # or DURABLE_TEAMS_OTEL=1

adds two interceptors to the client (and so to every worker built on it):

- Temporal's `TracingInterceptor`: a span for starting the conversation, for the workflow, for
  scheduling and running each activity, propagated through Temporal headers, so every span of
  a conversation (its child workflows' too) is in one trace. Its workflow spans are made only
  outside replay.
- `GenAITracingInterceptor`, following the OpenTelemetry GenAI semantic conventions:
  `invoke_agent <agent>` per agent run with a `handoff` span per transfer it made
  (durable_teams/tracing/workflow_spans.py: made when the run ends, outside replay, its children
  parented under it meanwhile); inside each `call_model` activity a `chat <model>` span
  (CLIENT) and the `gen_ai.client.token.usage` and `gen_ai.client.operation.duration`
  histograms; inside each tool activity an `execute_tool <tool>` span (INTERNAL). Activities
  never replay, so these are never duplicated; a retried attempt is a span of its own.

Spans and metrics go to the global tracer and meter providers (configure them as usual, e.g.
with an OTLP exporter), or to the `tracer` and `meter` you pass.
"""

from __future__ import annotations

import time
from typing import Any

import temporalio.activity
import temporalio.client
import temporalio.worker

try:
    from opentelemetry import metrics, trace
    from opentelemetry.trace import Status, StatusCode
except ImportError as missing:  # say what to install, not just what is missing
    raise ImportError("OpenTelemetry tracing needs the otel extra: "
                      "pip install 'durable-teams[otel]'") from missing

from durable_teams.activities import call_facts
from durable_teams.tracing.genai_metrics import GenAIMetrics
from durable_teams.tracing.workflow_spans import EXTERN, AgentRunSpans, emit_agent_run
from durable_teams.workflows.agent_spans import AgentRunRecord
from durable_teams.workflows.messages import ModelResponse, ToolResult

TOOL_ACTIVITIES = {"run_tool", "run_local_tool", "call_mcp_tool"}


def model_call_attributes(request: Any) -> dict[str, Any]:
    """What a span knows of a model call before it is made (a `ModelRequest`)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": request.model,
        "gen_ai.agent.name": request.agent,
        "gen_ai.conversation.id": request.workflow_id,
    }


def model_result_attributes(response: ModelResponse) -> dict[str, Any]:
    return {
        "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": response.usage.completion_tokens,
        "gen_ai.response.finish_reasons": [response.finish_reason or "unknown"],
    }


def tool_call_attributes(request: Any) -> dict[str, Any]:
    """A tool call's span attributes: a `ToolRequest`, or an MCP call (`MCPCall`)."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": request.tool,
        "gen_ai.tool.type": "function",  # run by this side, not by the model's provider
        "gen_ai.agent.name": request.agent,
    }
    call_id = getattr(request, "tool_call_id", None) or request.idempotency_key.rsplit("/", 1)[-1]
    attributes["gen_ai.tool.call.id"] = call_id
    if hasattr(request, "server"):
        attributes["durable_teams.mcp.server"] = request.server
    return attributes


def error_type(err: BaseException) -> str:
    """`error.type`: an application error's own type ("ModelAuthError"), else the class name."""
    return getattr(err, "type", None) or type(err).__name__


class _ActivitySpans(temporalio.worker.ActivityInboundInterceptor):
    def __init__(self, next: temporalio.worker.ActivityInboundInterceptor, tracer: trace.Tracer,
                 metrics: GenAIMetrics):
        super().__init__(next)
        self.tracer = tracer
        self.metrics = metrics

    async def execute_activity(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        kind = temporalio.activity.info().activity_type
        request = input.args[0] if input.args else None
        if kind == "call_model" and request is not None:
            return await self._model_call(input, request)
        if kind not in TOOL_ACTIVITIES or request is None:
            return await super().execute_activity(input)
        with self.tracer.start_as_current_span(f"execute_tool {request.tool}", kind=trace.SpanKind.INTERNAL,
                                               attributes=tool_call_attributes(request)) as span:
            try:
                result = await super().execute_activity(input)
            except Exception as err:
                span.set_attribute("error.type", error_type(err))
                raise  # the span records the exception and its status on the way out
            if isinstance(result, ToolResult) and result.is_error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, result.content[:200]))
            return result

    async def _model_call(self, input: temporalio.worker.ExecuteActivityInput, request: Any) -> Any:
        """A `chat` span and the GenAI metrics, with what the backend noted of the call (its
        provider, server, response id and model: activities/call_facts.py)."""
        attributes = model_call_attributes(request)
        began = time.perf_counter()
        result: ModelResponse | None = None
        with self.tracer.start_as_current_span(f"chat {request.model}", kind=trace.SpanKind.CLIENT,
                                               attributes=attributes) as span, \
                call_facts.collecting() as facts:
            try:
                result = await super().execute_activity(input)
            except Exception as err:
                facts["error.type"] = error_type(err)
                raise  # the span records the exception and its status on the way out
            finally:
                span.set_attributes(facts)
                self.metrics.record({**attributes, **facts}, time.perf_counter() - began, result)
            if isinstance(result, ModelResponse):
                span.set_attributes(model_result_attributes(result))
            return result


class GenAITracingInterceptor(temporalio.client.Interceptor, temporalio.worker.Interceptor):
    """GenAI spans and metrics: agent runs in workflows, model and tool calls in activities
    (on a client: applies to its workers). Put it after Temporal's `TracingInterceptor`."""

    def __init__(self, tracer: trace.Tracer | None = None, meter: metrics.Meter | None = None):
        self.tracer = tracer or trace.get_tracer("durable_teams")
        self.metrics = GenAIMetrics(meter)

    def intercept_activity(
        self, next: temporalio.worker.ActivityInboundInterceptor
    ) -> temporalio.worker.ActivityInboundInterceptor:
        return _ActivitySpans(next, self.tracer, self.metrics)

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        input.unsafe_extern_functions[EXTERN] = self._agent_run
        return AgentRunSpans

    def _agent_run(self, parent: trace.SpanContext, run: AgentRunRecord) -> None:
        """Called from the workflow sandbox when an agent run ends (outside replay)."""
        emit_agent_run(self.tracer, parent, run)


def tracing_interceptors(tracer: trace.Tracer | None = None,
                         meter: metrics.Meter | None = None) -> list[Any]:
    """Temporal's tracing interceptor, then ours (so our spans nest in its activity spans, and
    its workflow spans nest in our agent runs)."""
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer), GenAITracingInterceptor(tracer, meter)]
