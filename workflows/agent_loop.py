"""One agent's tool-calling loop, inside the workflow: call the model, answer every tool call
it made (in call order), repeat until it answers, hands off, or escalates.

Model calls and tool runs are activities; `ask_human`, approvals, handoffs and the small
built-in tools are handled here, in workflow state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from . import builtins, handoff, roster
    from .human import HumanDesk, Interrupted
    from .messages import Message, ModelRequest, ModelResponse, TeamSpec, ToolCall
    from .model_calls import activity_options, failure_text, policy_for
    from .state import ConversationState
    from .tool_calls import ToolRunner

class TurnFailed(Exception):
    """The turn cannot go on (the model kept failing); carries a message a user can read."""


@dataclass
class Budget:
    """Counters for one user turn; limits come from the team's `Budgets`."""

    model_calls: int = 0
    handoffs: int = 0
    tool_calls: int = 0


@dataclass
class AgentOutcome:
    kind: Literal["answer", "handoff", "escalate", "forward", "budget"]
    agent: str
    text: str = ""
    handoffs: list[tuple[str, ToolCall]] = field(default_factory=list)
    structured: dict | None = None


class AgentLoop:
    """Runs agents of one team against the conversation state."""

    def __init__(self, team: TeamSpec, state: ConversationState, desk: HumanDesk):
        self.team = team
        self.state = state
        self.desk = desk
        self.tools = ToolRunner(team, state, desk)
        self.in_fanout = False
        """True while several agent runs go on at once: no continue-as-new in between."""
        self.children: dict[int, str] = {}
        """Agent run id -> id of the child workflow running it now (workflows/children.py)."""
        self.interrupted_at: tuple[str, int, Budget] | None = None
        """(agent, view_id, budget before the batch) of the run a continue-as-new cut off."""

    @property
    def transcript(self):  # noqa: ANN201 - short alias
        return self.state.transcript

    @property
    def interruptible(self) -> bool:
        """Whether the turn can be cut here and resumed from state in the next run: one agent
        run going on, nothing in flight but waits for a person (no activity, no child)."""
        return not self.in_fanout and self.tools.in_flight == 0 and not self.children

    async def run(self, agent: str, view_id: int, budget: Budget, resume: bool = False) -> AgentOutcome:
        """The ReAct loop of `agent`, writing into scope `view_id` (0 = shared). `resume`
        first finishes answering the calls of the run's last message (a turn resumed after
        continue-as-new)."""
        if resume:
            outcome = await self.resume_calls(agent, view_id, budget)
            if outcome is not None:
                return outcome
        return await self._loop(agent, view_id, budget)

    async def resume_calls(self, agent: str, view_id: int, budget: Budget) -> AgentOutcome | None:
        """Answer the calls of the scope's last message that a continue-as-new cut off."""
        index = max(i for i, m in enumerate(self.transcript.log) if m.scope == view_id)
        message = self.transcript.log[index]
        if message.role == "assistant" and message.tool_calls:
            return await self.answer_calls(agent, view_id, index, message.tool_calls, budget)
        return None

    async def _loop(self, agent: str, view_id: int, budget: Budget) -> AgentOutcome:
        limits = self.team.budgets
        while True:
            if budget.model_calls >= limits.max_model_calls:
                return self.out_of_model_calls(agent, view_id)
            message, structured = await self.call_model(agent, view_id, budget)
            index = self.transcript.append(message)
            if not message.tool_calls:
                return AgentOutcome("answer", agent, message.content or "", structured=structured)
            outcome = await self.answer_calls(agent, view_id, index, message.tool_calls, budget)
            if outcome is not None:
                return outcome

    def out_of_model_calls(self, agent: str, scope: int) -> AgentOutcome:
        return self.stop(
            agent, scope,
            f"Stopped: this turn used its budget of {self.team.budgets.max_model_calls} model calls "
            "before an agent gave a final answer.",
        )

    def stop(self, agent: str, scope: int, text: str) -> AgentOutcome:
        self.transcript.append(
            Message(role="assistant", content=text, name=agent, scope=scope, kind="error")
        )
        return AgentOutcome("budget", agent, text)

    async def call_model(self, agent: str, view_id: int, budget: Budget) -> tuple[Message, dict | None]:
        """One model call for `agent` on view `view_id` (not yet appended to the transcript)."""
        spec = roster.agent_spec(self.team, agent)
        policy = policy_for(self.team, spec)
        sup = self.team.supervisor
        instructions = spec.instructions
        if sup is not None and agent != sup.name and sup.worker_preamble:
            instructions = roster.supervisor_block(sup.name) + instructions
        instructions = roster.render_instructions(
            instructions, now=workflow.now(), agent=agent,
            supervisor=sup.name if sup else None, context=self.state.context,
        )
        calls_so_far = self.state.model_calls_by_agent.get(agent, 0)
        self.state.model_calls_by_agent[agent] = calls_so_far + 1
        self.state.total_model_calls += 1
        budget.model_calls += 1
        info = workflow.info()
        length = len(self.transcript.log)
        request = ModelRequest(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            agent=agent,
            model=spec.model,
            view_id=view_id,
            transcript_length=length,
            shared_length=len(self.transcript.shared),
            instructions=instructions,
            parallel_tool_calls=sup.parallel_tool_calls if sup and agent == sup.name else None,
            output_schema=spec.output_schema,
            temperature=spec.temperature,
            agent_call_index=calls_so_far,
        )
        try:
            response: ModelResponse = await workflow.execute_activity(
                "call_model",
                request,
                result_type=ModelResponse,
                summary=f"model: {agent} ({length} messages)",
                **activity_options(policy),
            )
        except ActivityError as err:
            raise TurnFailed(f"The model call for {agent} failed: {failure_text(err, policy)}") from err
        message = response.message.model_copy(update={"name": agent, "scope": view_id})
        structured = None
        if spec.output_schema is not None and not message.tool_calls and message.content:
            try:
                structured = json.loads(message.content)
            except ValueError:
                structured = None
        return message, structured

    async def answer_calls(
        self, agent: str, scope: int, msg_index: int, calls: list[ToolCall], budget: Budget
    ) -> AgentOutcome | None:
        """Answer every call with exactly one tool message, in call order, then decide what
        happens next. Independent calls run concurrently."""
        before = replace(budget)
        try:
            return await self._answer(agent, scope, msg_index, calls, budget)
        except Interrupted:
            self.interrupted_at = self.interrupted_at or (agent, scope, before)
            raise

    async def _answer(
        self, agent: str, scope: int, msg_index: int, calls: list[ToolCall], budget: Budget
    ) -> AgentOutcome | None:
        owned = {t.name: t for t in roster.agent_tools(self.team, agent)}
        answered = self.state.answered_calls
        targets = roster.handoff_targets(self.team, agent)
        sup = self.team.supervisor
        max_handoffs = (sup.max_parallel_handoffs if sup.parallel_tool_calls else 1) if sup else 1
        handoffs: list[tuple[str, ToolCall]] = []
        escalation: str | None = None
        forward: str | None = None
        direct: list[int] = []
        pending: list[Awaitable[Message]] = []

        def ready(content: str, call: ToolCall, kind: str = "message") -> Awaitable[Message]:
            return _done(Message(role="tool", content=content, name=call.name,
                                 tool_call_id=call.id, scope=scope, kind=kind))  # type: ignore[arg-type]

        for position, call in enumerate(calls):
            if call.name in targets:
                target = targets[call.name]
                if len(handoffs) >= max_handoffs:
                    engaged = ", ".join(a for a, _ in handoffs)
                    why = "the cap on parallel handoffs" if max_handoffs > 1 else "parallel handoffs are off"
                    pending.append(ready(
                        f"Not transferred to {target}: only {max_handoffs} agent(s) can be engaged "
                        f"per reply ({why}). {engaged} is working on it; ask "
                        f"{target} afterwards if still needed.", call, "handoff"))
                elif budget.handoffs >= self.team.budgets.max_handoffs:
                    pending.append(ready(
                        f"Not transferred to {target}: this turn reached its budget of "
                        f"{self.team.budgets.max_handoffs} handoffs. Answer with what you have.",
                        call, "handoff"))
                else:
                    budget.handoffs += 1
                    handoffs.append((target, call))
                    pending.append(_done(handoff.handoff_message(target, call).model_copy(
                        update={"scope": scope})))
            elif call.id in answered:  # answered before a continue-as-new
                pending.append(_done(answered[call.id]))
            elif call.name not in owned:
                pending.append(ready(
                    f"Error: {call.name} is not a tool available to {agent}. "
                    f"Available tools: {', '.join(owned) or 'none'}.", call, "error"))
            elif call.name == handoff.ASK_HUMAN:
                asked = self.desk.ask(agent, call, self.team.ask_human_default)
                pending.append(self._remember(self._tool_message(scope, call, asked)))
            elif call.name == handoff.REQUEST_HELP:
                escalation = _argument(call, "reason") or "no reason given"
                pending.append(ready(f"Escalated to {sup.name if sup else 'supervisor'}: {escalation}", call))
            elif call.name == handoff.FORWARD_MESSAGE:
                source = _argument(call, "from_agent")
                found = self._latest_from(source)
                if found is None:
                    names = sorted({m.name for m in self.transcript.shared_messages() if m.role == "assistant" and m.name})
                    pending.append(ready(f"Could not find message from source agent {source}. Found names: {names}", call, "error"))
                else:
                    forward = found
                    pending.append(ready(f"Forwarded the latest message from {source}.", call))
            elif call.name == builtins.LIST_TOOLS:
                pending.append(ready(builtins.list_tools(list(owned.values())), call))
            elif call.name == builtins.LIST_AGENTS:
                pending.append(ready(builtins.list_agents(self.team), call))
            elif call.name == builtins.CURRENT_DATETIME:
                pending.append(ready(builtins.current_datetime(workflow.now(), call.arguments), call))
            elif budget.tool_calls >= self.team.budgets.max_tool_calls:
                pending.append(ready(f"Not run: this turn reached its budget of "
                                     f"{self.team.budgets.max_tool_calls} tool calls.", call, "error"))
            else:
                budget.tool_calls += 1
                if owned[call.name].return_direct:
                    direct.append(len(pending))
                pending.append(self._remember(self.tools.run(agent, scope, msg_index, call, position)))

        messages = await asyncio.gather(*pending)
        for message in messages:
            self.transcript.append(message)
            answered.pop(message.tool_call_id or "", None)
        tool_handoffs = self.tools.handoffs
        if not handoffs:  # a tool may hand the conversation over by returning Result(agent=...)
            handoffs = [(tool_handoffs.pop(m.tool_call_id), ToolCall(id=m.tool_call_id, name=m.name or ""))
                        for m in messages if m.tool_call_id in tool_handoffs][:1]
        if escalation is not None:
            return AgentOutcome("escalate", agent, escalation)
        if handoffs:
            return AgentOutcome("handoff", agent, handoffs=handoffs)
        if forward is not None:
            return AgentOutcome("forward", agent, forward)
        if direct:
            return AgentOutcome("answer", agent, "\n".join(messages[i].content or "" for i in direct))
        return None

    def _latest_from(self, agent: str) -> str | None:
        for m in reversed(self.transcript.shared_messages()):
            if m.role == "assistant" and m.name == agent and m.kind == "message" and m.content:
                return m.content
        return None

    async def _remember(self, answer: Awaitable[Message]) -> Message:
        """Keep an answer in state as soon as it exists: if the run continues as new before
        the whole batch is answered, the next run reuses it instead of running it again."""
        message = await answer
        self.state.answered_calls[message.tool_call_id or ""] = message
        return message

    async def _tool_message(self, scope: int, call: ToolCall, content: Awaitable[str]) -> Message:
        return Message(role="tool", content=await content, name=call.name,
                       tool_call_id=call.id, scope=scope, kind="human")


async def _done(message: Message) -> Message:
    return message


def _argument(call: ToolCall, key: str) -> str:
    try:
        value = json.loads(call.arguments or "{}").get(key, "")
    except (ValueError, AttributeError):
        return ""
    return str(value)
