"""The support team of the time travel tests: a counting scripted model's script and a refund
tool that is not idempotent, counted."""

from __future__ import annotations

from collections import Counter
from typing import Any

from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import call, say
from durable_teams.workflows.messages import Message, ModelRequest

REFUNDS: Counter[str] = Counter()
"""Refunds paid, by order id: the tool is not idempotent, so a second run pays twice."""


@tool
def execute_refund(order: str) -> str:
    """Refund an order."""
    REFUNDS[order] += 1
    return f"refunded {order}"


def support_model(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """Refunds the order a user names ("refund A1"), then confirms; echoes anything else."""
    last = messages[-1]
    if last["role"] == "tool":
        return say(f"done: {last['content']}")
    text = last["content"] or ""
    if text.startswith("refund "):
        return call("execute_refund", order=text.removeprefix("refund "))
    return say(f"support heard: {text}")


def support() -> CompiledTeam:
    return Swarm([Agent("support", "Help customers.", tools=[execute_refund])]).compile()
