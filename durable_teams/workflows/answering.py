"""Answering one model reply's tool calls, in workflow state.

Every call gets exactly one tool message, in call order, before control moves, also when a
reply mixes a handoff with other calls. Each call is classified once: a handoff
(`transfer_to_<agent>`), an answer kept from before a continue-as-new, a tool the agent does
not own (an error message listing its tools), a built-in (workflows/builtins.py, answered
here), or a tool that runs as an activity (workflows/tool_calls.py). Independent calls run
concurrently; the answers are collected in call order and decide what the run does next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from . import handoff, roster
    from .builtins import BUILTINS, Answer, Builtin
    from .human import HumanDesk
    from .messages import Message, TeamSpec, ToolCall, ToolSpec
    from .state import ConversationState, Flag
    from .tool_calls import ToolRunner


@dataclass
class Budget:
    """Counters for one user turn; limits come from the team's `Budgets`."""

    model_calls: int = 0
    handoffs: int = 0
    tool_calls: int = 0


@dataclass
class AgentOutcome:
    """How an agent run ended (or None from `answer`: the run goes on)."""

    kind: Literal["answer", "handoff", "escalate", "forward", "budget", "stopped"]
    """"stopped": a person stopped the turn at a breakpoint (workflows/breakpoints.py)."""
    agent: str
    text: str = ""
    handoffs: list[tuple[str, ToolCall]] = field(default_factory=list)
    structured: dict | None = None
    flag: Flag | None = None
    """Set when the answer was cut off ("truncated") or stopped by a content filter."""


class CallAnswerer:
    """Answers the tool calls of agents of one team against the conversation state."""

    def __init__(self, team: TeamSpec, state: ConversationState, desk: HumanDesk, tools: ToolRunner):
        self.team = team
        self.state = state
        self.desk = desk
        self.tools = tools

    async def answer(
        self, agent: str, agent_run: int, msg_index: int, calls: list[ToolCall], budget: Budget
    ) -> AgentOutcome | None:
        """Answer `calls` (the reply at log index `msg_index`, of agent run `agent_run`) and say what
        the run does next: an outcome that ends it, or None (call the model again)."""
        batch = _Batch(_Caller(self.team, self.state, self.desk, agent))
        pending = [self._classify(batch, agent_run, msg_index, call, position, budget)
                   for position, call in enumerate(calls)]
        messages = await asyncio.gather(*pending)
        for message in messages:
            self.state.transcript.append(message)
            self.state.answered_calls.pop(message.tool_call_id or "", None)
        stops = [self.tools.stopped.pop(m.tool_call_id) for m in messages if m.tool_call_id in self.tools.stopped]
        if stops:  # a person stopped the run at a breakpoint after a tool (workflows/breakpoints.py)
            self.state.transcript.append(Message(role="assistant", content=stops[0], name=agent,
                                                 agent_run=agent_run, kind="error"))
            return AgentOutcome("stopped", agent, stops[0])
        return self._outcome(agent, messages, batch)

    def _classify(
        self, batch: _Batch, agent_run: int, msg_index: int, call: ToolCall, position: int, budget: Budget
    ) -> Awaitable[Message]:
        """How one call is answered: a handoff, an answer kept from before a continue-as-new,
        an unknown tool, a built-in, or a tool activity. Runs in call order, before any of
        the answers is awaited (handoff and tool budgets are counted here)."""
        caller, limits = batch.caller, self.team.budgets
        if call.name in caller.targets:
            return self._handoff(batch, agent_run, call, budget)
        if call.id in self.state.answered_calls:
            return _done(self.state.answered_calls[call.id])
        if call.name not in caller.owned:
            return _done(_tool_message(call, agent_run, "error", (
                f"Error: {call.name} is not a tool available to {caller.agent}. "
                f"Available tools: {', '.join(caller.owned) or 'none'}.")))
        builtin = BUILTINS.get(call.name)
        if builtin is not None:
            answer = self._builtin(batch, builtin, agent_run, call, position)
            return self._remember(answer) if builtin.remember else answer
        if budget.tool_calls >= limits.max_tool_calls:
            return _done(_tool_message(call, agent_run, "error", (
                f"Not run: this turn reached its budget of {limits.max_tool_calls} tool calls.")))
        budget.tool_calls += 1
        if caller.owned[call.name].return_direct:
            batch.direct.append(position)
        return self._remember(self.tools.run(caller.agent, agent_run, msg_index, call, position))

    def _handoff(self, batch: _Batch, agent_run: int, call: ToolCall, budget: Budget) -> Awaitable[Message]:
        target = batch.caller.targets[call.name]
        sup = self.team.supervisor
        most = (sup.max_parallel_handoffs if sup.parallel_tool_calls else 1) if sup else 1
        if len(batch.handoffs) >= most:
            engaged = ", ".join(a for a, _ in batch.handoffs)
            why = "the cap on parallel handoffs" if most > 1 else "parallel handoffs are off"
            return _done(_tool_message(call, agent_run, "handoff", (
                f"Not transferred to {target}: only {most} agent(s) can be engaged per reply "
                f"({why}). {engaged} is working on it; ask {target} afterwards if still needed.")))
        if budget.handoffs >= self.team.budgets.max_handoffs:
            return _done(_tool_message(call, agent_run, "handoff", (
                f"Not transferred to {target}: this turn reached its budget of "
                f"{self.team.budgets.max_handoffs} handoffs. Answer with what you have.")))
        budget.handoffs += 1
        batch.handoffs.append((target, call))
        return _done(handoff.handoff_message(target, call).model_copy(update={"agent_run": agent_run}))

    async def _builtin(self, batch: _Batch, builtin: Builtin, agent_run: int, call: ToolCall,
                       position: int) -> Message:
        answer = await builtin.handle(batch.caller, call)
        batch.builtins[position] = answer
        return _tool_message(call, agent_run, answer.kind, answer.content)

    def _outcome(self, agent: str, messages: list[Message], batch: _Batch) -> AgentOutcome | None:
        """What the answered batch means for the run, in order of precedence: an escalation,
        handoffs (a tool may hand over too, by returning Result(agent=...)), a forwarded
        answer, return_direct results; else None, and the loop calls the model again."""
        handoffs = batch.handoffs
        tool_handoffs = self.tools.handoffs
        if not handoffs:
            handoffs = [(tool_handoffs.pop(m.tool_call_id), ToolCall(id=m.tool_call_id, name=m.name or ""))
                        for m in messages if m.tool_call_id in tool_handoffs][:1]
        answers = [batch.builtins[p] for p in sorted(batch.builtins)]
        escalations = [a.escalate for a in answers if a.escalate is not None]
        forwards = [a.forward for a in answers if a.forward is not None]
        if escalations:
            return AgentOutcome("escalate", agent, escalations[-1])
        if handoffs:
            return AgentOutcome("handoff", agent, handoffs=handoffs)
        if forwards:
            return AgentOutcome("forward", agent, forwards[-1])
        if batch.direct:
            return AgentOutcome("answer", agent, "\n".join(messages[i].content or "" for i in batch.direct))
        return None

    async def _remember(self, answer: Awaitable[Message]) -> Message:
        """Keep an answer in state as soon as it exists: if the run continues as new before
        the whole batch is answered, the next run reuses it instead of running it again."""
        message = await answer
        self.state.answered_calls[message.tool_call_id or ""] = message
        return message


@dataclass
class _Caller:
    """The calling agent's side of a batch: what built-ins may read (`builtins.CallContext`)."""

    team: TeamSpec
    state: ConversationState
    desk: HumanDesk
    agent: str
    owned: dict[str, ToolSpec] = field(init=False)
    targets: dict[str, str] = field(init=False)
    """Handoff tool name -> agent."""

    def __post_init__(self) -> None:
        self.owned = {t.name: t for t in roster.agent_tools(self.team, self.agent)}
        self.targets = roster.handoff_targets(self.team, self.agent)

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self.owned.values())

    def now(self) -> datetime:
        return workflow.now()

    def shared_messages(self) -> list[Message]:
        return self.state.transcript.shared_messages()

    def active_agent(self) -> str | None:
        return self.state.active_agent

    def ask(self, call: ToolCall) -> Awaitable[str]:
        return self.desk.ask(self.agent, call, self.team.ask_human_default)


@dataclass
class _Batch:
    """What answering one reply's calls decided, filled in call order."""

    caller: _Caller
    handoffs: list[tuple[str, ToolCall]] = field(default_factory=list)
    builtins: dict[int, Answer] = field(default_factory=dict)
    """Position of the call -> the built-in's answer."""
    direct: list[int] = field(default_factory=list)
    """Positions of return_direct tool calls."""


def _tool_message(call: ToolCall, agent_run: int, kind: str, content: str) -> Message:
    return Message(role="tool", content=content, name=call.name, tool_call_id=call.id,
                   agent_run=agent_run, kind=kind)  # type: ignore[arg-type]


async def _done(message: Message) -> Message:
    return message

