"""OpenTelemetry traces of conversations (`pip install 'durable-teams[otel]'`).

    client = await connect(address, tracing=True)     # or DURABLE_TEAMS_OTEL=1

adds two interceptors to the client (and so to every worker built on it):

- Temporal's `TracingInterceptor`: a span for starting the conversation, for the workflow, for
  scheduling and running each activity, propagated through Temporal headers, so every span of
  a conversation (its child workflows' too) is in one trace. Its workflow spans are made only
  outside replay.
- `GenAITracingInterceptor`: inside each `call_model` and tool activity, a span with the
  OpenTelemetry GenAI semantic-convention attributes (`chat <model>`: gen_ai.request.model,
  gen_ai.agent.name, gen_ai.usage.input_tokens / output_tokens,
  gen_ai.response.finish_reasons; `execute_tool <tool>`: gen_ai.tool.name,
  gen_ai.tool.call.id). Activities never replay, so these spans are never duplicated; a
  retried attempt is a span of its own, as it should be.

Spans go to the global tracer provider (configure it as usual, e.g. an OTLP exporter), or to
the `tracer` you pass.
"""

from __future__ import annotations

from typing import Any

import temporalio.activity
import temporalio.client
import temporalio.worker

try:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
except ImportError as missing:  # say what to install, not just what is missing
    raise ImportError("OpenTelemetry tracing needs the otel extra: "
                      "pip install 'durable-teams[otel]'") from missing

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
        "gen_ai.agent.name": request.agent,
    }
    call_id = getattr(request, "tool_call_id", None) or request.idempotency_key.rsplit("/", 1)[-1]
    attributes["gen_ai.tool.call.id"] = call_id
    if hasattr(request, "server"):
        attributes["durable_teams.mcp.server"] = request.server
    return attributes


class _ActivitySpans(temporalio.worker.ActivityInboundInterceptor):
    def __init__(self, next: temporalio.worker.ActivityInboundInterceptor, tracer: trace.Tracer):
        super().__init__(next)
        self.tracer = tracer

    async def execute_activity(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        kind = temporalio.activity.info().activity_type
        request = input.args[0] if input.args else None
        if kind == "call_model" and request is not None:
            name, attributes = f"chat {request.model}", model_call_attributes(request)
        elif kind in TOOL_ACTIVITIES and request is not None:
            name, attributes = f"execute_tool {request.tool}", tool_call_attributes(request)
        else:
            return await super().execute_activity(input)
        with self.tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT,
                                               attributes=attributes) as span:
            try:
                result = await super().execute_activity(input)
            except Exception as err:
                span.set_attribute("error.type", type(err).__name__)
                raise  # the span records the exception and its status on the way out
            if isinstance(result, ModelResponse):
                span.set_attributes(model_result_attributes(result))
            elif isinstance(result, ToolResult) and result.is_error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, result.content[:200]))
            return result


class GenAITracingInterceptor(temporalio.client.Interceptor, temporalio.worker.Interceptor):
    """GenAI spans around model and tool activities (on a client: applies to its workers)."""

    def __init__(self, tracer: trace.Tracer | None = None):
        self.tracer = tracer or trace.get_tracer("durable_teams")

    def intercept_activity(
        self, next: temporalio.worker.ActivityInboundInterceptor
    ) -> temporalio.worker.ActivityInboundInterceptor:
        return _ActivitySpans(next, self.tracer)


def tracing_interceptors(tracer: trace.Tracer | None = None) -> list[Any]:
    """Temporal's tracing interceptor, then ours (so our spans nest in its activity spans)."""
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer), GenAITracingInterceptor(tracer)]
