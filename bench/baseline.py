"""Baselines measured in the same run: Temporal's floor, and the peers' naive shape.

Kept apart from run.py so the workflow sandbox imports nothing but this module.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

BLOB = 2000  # characters of new content per step (the tool's output)


@activity.defn
async def echo(payload: str, size: int) -> str:
    return "y" * size


@workflow.defn
class FloorWorkflow:
    """N model-sized and N-1 tool-sized activities, nothing else."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity(echo, args=["r" * 300, 150], start_to_close_timeout=timedelta(seconds=30))
            if i < n - 1:
                await workflow.execute_activity(echo, args=["t" * 250, BLOB], start_to_close_timeout=timedelta(seconds=30))
        return n


@workflow.defn
class NaiveWorkflow:
    """The peers' shape: the whole transcript is the model activity's input, every call."""

    @workflow.run
    async def run(self, n: int) -> int:
        transcript: list[str] = ["user: read"]
        for i in range(n):
            reply = await workflow.execute_activity(echo, args=["\n".join(transcript), 150],
                                                    start_to_close_timeout=timedelta(seconds=30))
            transcript.append(reply)
            if i < n - 1:
                transcript.append(await workflow.execute_activity(
                    echo, args=["t" * 250, BLOB], start_to_close_timeout=timedelta(seconds=30)))
        return n




@workflow.defn
class FloorHTTPWorkflow:
    """The floor against a real HTTP model: N model calls through the same openai client (one
    short message each; the model server answers after its latency) and N-1 2 KB tool calls."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity("model_http", "r" * 300, result_type=str,
                                            start_to_close_timeout=timedelta(seconds=120))
            if i < n - 1:
                await workflow.execute_activity(echo, args=["t" * 250, BLOB], start_to_close_timeout=timedelta(seconds=30))
        return n
