"""The OpenTelemetry GenAI client metrics of model calls: `gen_ai.client.token.usage` and
`gen_ai.client.operation.duration`, with the semantic conventions' bucket boundaries."""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics

from durable_teams.workflows.messages import ModelResponse

TOKEN_BUCKETS = [4.0 ** i for i in range(14)]
"""1, 4, 16, ... 67108864: the conventions' advice for token counts."""
DURATION_BUCKETS = [0.01 * 2 ** i for i in range(14)]
"""0.01, 0.02, 0.04, ... 81.92 seconds: the conventions' advice for operation durations."""

METRIC_ATTRIBUTES = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
                     "gen_ai.response.model", "server.address", "server.port", "error.type")
"""What the metrics are broken down by (a span's other attributes would explode cardinality)."""


class GenAIMetrics:
    """The two histograms, recorded once per model call attempt."""

    def __init__(self, meter: metrics.Meter | None = None) -> None:
        meter = meter or metrics.get_meter("durable_teams")
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)

    def record(self, attributes: dict[str, Any], seconds: float, response: ModelResponse | None) -> None:
        """One call: its duration, and its token counts when the endpoint reported usage."""
        base = {k: v for k, v in attributes.items() if k in METRIC_ATTRIBUTES}
        self.duration.record(seconds, base)
        usage = response.usage if response is not None else None
        if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
            return  # not reported: a made-up zero would drag every percentile down
        self.tokens.record(usage.prompt_tokens, {**base, "gen_ai.token.type": "input"})
        self.tokens.record(usage.completion_tokens, {**base, "gen_ai.token.type": "output"})
