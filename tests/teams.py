"""Teams and scripted models more than one test module runs: the echo team, the refund desk
(asks for an order number, refunds after approval), and models that hold, slow or meter calls."""

from __future__ import annotations

import asyncio
from typing import Any

from durable_teams.client.approvals import ask_again
from durable_teams.teams.builders import Agent, Swarm, handoff
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.messages import Message, ModelCalls, ModelRequest, ModelResponse, Usage

TEAM = Swarm([Agent("echo", "Repeat what you hear.")], name="echo").compile()


def echo(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    return say(f"heard: {messages[-1]['content']}")


REFUNDS: list[str] = []


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a person approves it first)."""
    REFUNDS.append(order)
    return "refunded"


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """`desk_reply`, each call reporting 100 prompt and 10 completion tokens."""
    return ModelResponse(message=desk_reply(messages), usage=Usage(prompt_tokens=100, completion_tokens=10))


def desk_reply(messages: list[dict[str, Any]]) -> Message:
    """Asks for the order number, refunds it once approved; otherwise says what it saw."""
    last = messages[-1]
    if last["role"] == "tool" and last["content"] == "refunded":
        return say("Your refund is on its way.")
    if last["role"] == "tool" and last["content"].startswith("(No answer"):
        return say("I'll wait for your order number.")
    if last["role"] == "tool":
        return call("refund", order=last["content"].split()[-1])
    if last["content"].startswith(FIRST):
        return call("ask_human", question="What's your order number?")
    seen = [f"{m['role']}:{m['content']}" for m in messages if m["role"] in ("user", "assistant", "system")]
    return say(f"I saw {seen}")


DESK = Swarm([Agent("desk", "Help.", tools=["ask_human", refund])], name="desk").compile()


FIRST = "I want a refund"


ASKED = "[desk] What's your order number?"


APPROVAL = '[desk] Approve refund({"order": "4711"})? Reply yes or no.'


DONE = "Your refund is on its way."


class GatedModel(ScriptedModel):
    """The echo model, holding every call until `gate` opens."""

    def __init__(self) -> None:
        super().__init__(echo)
        self.gate = asyncio.Event()

    async def complete(self, req: ModelRequest, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]]) -> ModelResponse:
        await self.gate.wait()
        return await super().complete(req, messages, tools)


def finishing(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
    """Answers "partial answer" with the finish reason the user's message names."""
    reason = messages[-1]["content"]
    return ModelResponse(message=say("partial answer"), finish_reason=reason)


LOCAL_MARKER = "core_local_activity"


class SlowModel(ScriptedModel):
    """The scripted model, answering each call `seconds` late; counts the calls it began."""

    def __init__(self, script: dict, seconds: float) -> None:
        super().__init__(script)
        self.seconds = seconds
        self.began = 0

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        self.began += 1
        await asyncio.sleep(self.seconds)
        return await super().complete(req, messages, tools)


LOCAL = ModelCalls(local=True)
"""Local model calls are opt-in (workflows/options.py ModelCalls.local)."""


def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if req.agent == "triage":
        return call("transfer_to_sales")
    if last["role"] == "tool" and last["content"].startswith("order"):
        return say(f"sales got: {last['content']}")
    if last["role"] == "user" and last["content"] == "need help":
        return call("ask_human", question="Which order?")
    user = next(m for m in reversed(messages) if m["role"] == "user")
    return say(f"sales: {user['content']}")


def team_with_threshold(events: int) -> Any:
    sales = Agent("sales", "Sell.", tools=["ask_human"])
    triage = Agent("triage", "Route.", handoffs=[handoff(sales, "transfer_to_sales")])
    compiled = Swarm([triage, sales], name="long").compile()
    compiled.spec.continue_as_new_after_events = events
    return compiled


TOKENS = {"supervisor": (100, 10), "research_expert": (200, 20), "math_expert": (300, 30),
          "top_supervisor": (10, 1), "research_team": (20, 2), "math_team": (30, 3), "solo": (60, 40)}


class MeteredModel(ScriptedModel):
    """The scripted model, reporting a fixed usage per agent (as a live API would)."""

    async def complete(self, req: ModelRequest, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]]) -> ModelResponse:
        response = await super().complete(req, messages, tools)
        prompt, completion = TOKENS[req.agent]
        return response.model_copy(update={"usage": Usage(prompt_tokens=prompt, completion_tokens=completion)})


UNCLEAR = ["hmm, what will that do to my account?", "Yes if it is under $20", "ok, why?", "ok wait", "right?"]


AGAIN = f"{ask_again('refund')} {APPROVAL}"


