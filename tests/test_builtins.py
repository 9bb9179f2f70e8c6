"""The registry of built-in tools: one entry per built-in (name, schema, handler). Pure."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from durable_teams import Agent, Supervisor, Swarm
from durable_teams.workflows.builtins import BUILTINS, Answer
from durable_teams.workflows.messages import Message, TeamSpec, ToolCall, ToolSpec
from durable_teams.workflows.roster import agent_tools

pytestmark = pytest.mark.pure

NOW = datetime(2026, 11, 23, 15, 30, tzinfo=UTC)


@dataclass
class Context:
    team: TeamSpec
    agent: str = "worker"
    tools: list[ToolSpec] = field(default_factory=list)
    shared: list[Message] = field(default_factory=list)
    asked: list[ToolCall] = field(default_factory=list)

    def now(self) -> datetime:
        return NOW

    def shared_messages(self) -> list[Message]:
        return self.shared

    def ask(self, call: ToolCall) -> Awaitable[str]:
        self.asked.append(call)

        async def answer() -> str:
            return "Order 4711"

        return answer()


def team() -> TeamSpec:
    worker = Agent("worker", "w", description="Does the work.", tools=list(BUILTINS))
    return Supervisor([worker], supervisor_name="boss", name="t").compile().spec


def answer(name: str, ctx: Context, **arguments: object) -> Answer:
    call = ToolCall(id="c1", name=name, arguments=json.dumps(arguments))
    return asyncio.run(BUILTINS[name].handle(ctx, call))  # type: ignore[arg-type]


def test_every_builtin_is_offered_under_its_own_name() -> None:
    spec = team()
    offered = [t.name for t in agent_tools(spec, "worker")]
    assert offered == list(BUILTINS)
    assert all(BUILTINS[n].spec(spec).name == n for n in BUILTINS)
    assert "boss" in BUILTINS["request_help"].spec(spec).description
    swarm = Swarm([Agent("a", tools=["request_help"])]).compile().spec
    assert "Escalate back to supervisor" in BUILTINS["request_help"].spec(swarm).description


def test_handlers_answer_from_the_context() -> None:
    spec = team()
    ctx = Context(spec, tools=agent_tools(spec, "worker"), shared=[
        Message(role="assistant", name="worker", content="first"),
        Message(role="assistant", name="worker", content="latest"),
    ])
    assert answer("ask_human", ctx, question="Which order?") == Answer("Order 4711", kind="human")
    assert [c.name for c in ctx.asked] == ["ask_human"]
    assert answer("request_help", ctx, reason="not mine") == Answer(
        "Escalated to boss: not mine", escalate="not mine")
    assert answer("request_help", ctx).escalate == "no reason given"
    assert answer("forward_message", ctx, from_agent="worker") == Answer(
        "Forwarded the latest message from worker.", forward="latest")
    missing = answer("forward_message", ctx, from_agent="nobody")
    assert (missing.kind, missing.forward) == ("error", None)
    assert missing.content == "Could not find message from source agent nobody. Found names: ['worker']"
    assert answer("list_tools", ctx).content.splitlines()[0].startswith("ask_human: Ask the human")
    assert answer("list_agents", ctx).content == "worker: Does the work."
    assert answer("current_datetime", ctx, timezone="Asia/Tokyo").content == (
        "2026-11-24T00:30:00+09:00 (Tuesday, Asia/Tokyo)")
    assert BUILTINS["ask_human"].remember and not BUILTINS["list_tools"].remember


def test_an_unknown_builtin_name_is_refused_at_definition() -> None:
    with pytest.raises(ValueError, match="unknown built-in tool 'ask_humans'"):
        Swarm([Agent("a", tools=["ask_humans"])]).compile()
