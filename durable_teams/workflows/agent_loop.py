"""One agent's tool-calling loop, inside the workflow: call the model, answer every tool call
it made (in call order), repeat until it answers, hands off, or escalates.

Model calls and tool runs are activities; how one reply's calls are answered (handoffs,
built-in tools, activities) is workflows/answering.py.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeout

with workflow.unsafe.imports_passed_through():
    from . import roster, usage
    from .agent_spans import SINK, AgentRunRecord, HandoffMade, agent_run_span
    from .agent_views import ViewBuilder
    from .answering import AgentOutcome, Budget, CallAnswerer
    from .breakpoints import pauses
    from .human import HumanDesk, Interrupted
    from .messages import (
        AgentSpec,
        Message,
        ModelRequest,
        TeamSpec,
        ToolCall,
        Usage,
    )
    from .model_calls import (
        failure_text,
        policy_for,
    )
    from .model_dispatch import execute_model
    from .offered_views import OfferedViews
    from .placement import ModelPlacement
    from .state import ConversationState, Flag, flagged
    from .tool_calls import ToolRunner
    from .tool_support import handoff_only_failure, tools_unavailable_notice


class TurnFailed(Exception):
    """The turn cannot go on (the model kept failing); carries a message a user can read."""


class AgentLoop:
    """Runs agents of one team against the conversation state."""

    def __init__(self, team: TeamSpec, state: ConversationState, desk: HumanDesk,
                 placement: ModelPlacement | None = None, views: ViewBuilder | None = None,
                 offered: OfferedViews | None = None, max_tokens: int | None = None):
        self.team = team
        self.placement = placement or ModelPlacement()
        """Where model calls run (the run's, shared by its turns: workflows/placement.py)."""
        self.views = views or ViewBuilder()
        """Agents' views, built incrementally (the run's, shared by its turns)."""
        self.offered = offered if offered is not None else OfferedViews()
        """Each model call's view while it is in flight, for the activity (workflows/offered_views.py)."""
        self.state = state
        self.desk = desk
        self.tools = ToolRunner(team, state, desk)
        self.answering = CallAnswerer(team, state, desk, self.tools)
        self.in_fanout = False
        """True while several agent runs go on at once: no continue-as-new in between."""
        self.children: dict[int, str] = {}
        """Agent run id -> id of the child workflow running it now (workflows/children.py)."""
        self.interrupted_at: tuple[str, int, Budget] | None = None
        """(agent, agent_run, budget before the batch) of the run a continue-as-new cut off."""
        self.max_tokens = max_tokens
        """The turn's cap on each model call's reply (a chat client's `max_tokens`)."""

    @property
    def transcript(self):  # noqa: ANN201 - short alias
        return self.state.transcript

    @property
    def interruptible(self) -> bool:
        """Whether the turn can be cut here and resumed from state in the next run: one agent
        run going on, nothing in flight but waits for a person (no activity, no child)."""
        return not self.in_fanout and self.tools.in_flight == 0 and not self.children

    async def run(self, agent: str, agent_run: int, budget: Budget, resume: bool = False) -> AgentOutcome:
        """The ReAct loop of `agent`, writing into agent run `agent_run` (0 = shared). `resume`
        first finishes answering the calls of the run's last message (a turn resumed after
        continue-as-new)."""
        with self.span(agent, agent_run) as span:
            breaks = self.tools.breaks
            stopped = await breaks.before_agent(agent) if (
                breaks.on and not resume and pauses(self.team, "before", agent)) else None
            if stopped is not None:  # a worker's supervisor is told; a stopped shared run ends the turn
                return self.stop(agent, agent_run, stopped, "answer" if agent_run else "stopped")
            outcome = await self.resume_calls(agent, agent_run, budget) if resume else None
            if outcome is None:
                outcome = await self._loop(agent, agent_run, budget)
            if breaks.on and outcome.kind not in ("budget", "stopped") and pauses(self.team, "after", agent):
                stopped = await breaks.after_agent(agent, _what(outcome))
                if stopped is not None:  # routing goes no further
                    return self.stop(agent, agent_run, stopped, "stopped")
            if span is not None and outcome.kind == "handoff":
                span.handoffs = [HandoffMade(target, call.name, call.id) for target, call in outcome.handoffs]
            return outcome

    def span(self, agent: str, agent_run: int) -> AbstractContextManager[AgentRunRecord | None]:
        """The agent run as tracing sees it (workflows/agent_spans.py; nothing when not tracing)."""
        if SINK.get() is None:
            return nullcontext(None)
        spec = self.team.agents.get(agent)
        model = roster.agent_spec(self.team, agent).model if spec is None or spec.team is None else None
        return agent_run_span(agent, agent_run, len(self.transcript.log), model=model,
                              team=self.team.name, benign=(Interrupted,))

    async def resume_calls(self, agent: str, agent_run: int, budget: Budget) -> AgentOutcome | None:
        """Answer the calls of the agent run's last message that a continue-as-new cut off."""
        index = max(i for i, m in enumerate(self.transcript.log) if m.agent_run == agent_run and m.kind != "notice")
        message = self.transcript.log[index]
        if message.role == "assistant" and message.tool_calls:
            return await self.answer_calls(agent, agent_run, index, message.tool_calls, budget)
        return None

    async def _loop(self, agent: str, agent_run: int, budget: Budget) -> AgentOutcome:
        while True:
            stopped = self.budget_stop(agent, agent_run, budget)
            if stopped is not None:
                return stopped
            message, structured, flag = await self.call_model(agent, agent_run, budget)
            index = self.transcript.append(message)
            if not message.tool_calls:
                return AgentOutcome("answer", agent, message.content or "", structured=structured, flag=flag)
            outcome = await self.answer_calls(agent, agent_run, index, message.tool_calls, budget)
            if outcome is not None:
                return outcome

    def budget_stop(self, agent: str, agent_run: int, budget: Budget) -> AgentOutcome | None:
        """End the turn before a model call if a call or token budget is spent."""
        if budget.model_calls >= self.team.budgets.max_model_calls:
            return self.out_of_model_calls(agent, agent_run)
        turn = usage.current_turn(self.state.queue, self.state.turns_started)
        over = usage.over_budget(self.state.usage, turn, self.team.budgets)
        return None if over is None else self.stop(agent, agent_run, over)

    def out_of_model_calls(self, agent: str, agent_run: int) -> AgentOutcome:
        return self.stop(
            agent, agent_run,
            f"Stopped: this turn used its budget of {self.team.budgets.max_model_calls} model calls "
            "before an agent gave a final answer.",
        )

    def stop(self, agent: str, agent_run: int, text: str,
             kind: Literal["budget", "stopped", "answer"] = "budget") -> AgentOutcome:
        self.transcript.append(
            Message(role="assistant", content=text, name=agent, agent_run=agent_run, kind="error")
        )
        return AgentOutcome(kind, agent, text)

    async def call_model(
        self, agent: str, agent_run: int, budget: Budget
    ) -> tuple[Message, dict | None, Flag | None]:
        """One model call for `agent` on the view of `agent_run` (not yet appended to the
        transcript): the message, its structured answer if the agent has an output schema, and
        the flag its `finish_reason` gives ("truncated", "filtered") if any."""
        spec = roster.agent_spec(self.team, agent)
        policy = policy_for(self.team, spec)
        calls_so_far = self.state.model_calls_by_agent.get(agent, 0)
        self.state.model_calls_by_agent[agent] = calls_so_far + 1
        self.state.total_model_calls += 1
        budget.model_calls += 1
        length = len(self.transcript.log)
        request = self._model_request(agent, agent_run, spec, calls_so_far, length)
        instructions = request.instructions
        # What the model receives: the system message and this agent's view (not the log),
        # built once, here, and handed to the activity when it runs in this process.
        view = self.views.view(self.transcript, agent_run, length, len(self.transcript.shared),
                               roster.handoff_view(self.team))
        received = len(view) + bool(instructions)
        self.offered.offer(agent_run, length, view, roster.agent_tools(self.team, agent))
        scheduled = workflow.now()
        try:
            response = await execute_model(
                request, f"model: {agent} ({received} message{'' if received == 1 else 's'})", policy,
                self.placement)
        except (ActivityError, ApplicationError, TemporalTimeout) as err:  # a local activity's may come unwrapped
            why = failure_text(err, policy, (workflow.now() - scheduled).total_seconds())
            raise TurnFailed(f"The model call for {agent} failed: {why}") from err
        finally:
            self.offered.withdraw(agent_run, length)
        turn = usage.current_turn(self.state.queue, self.state.turns_started)
        usage.record(self.state.usage, turn, agent, spec.model, response.usage)
        if response.tools_unavailable is not None:  # only ever set in runs recorded since
            self._tools_unavailable(agent, agent_run, spec.model, response.tools_unavailable)
        used = response.usage if response.usage != Usage() else None  # kept on the message
        message = response.message.model_copy(
            update={"name": agent, "agent_run": agent_run, "usage": used})
        structured = None
        if spec.output_schema is not None and not message.tool_calls and message.content:
            try:
                structured = json.loads(message.content)
            except ValueError:
                structured = None
        return message, structured, flagged(response.finish_reason)

    def _model_request(self, agent: str, agent_run: int, spec: AgentSpec, calls_so_far: int,
                       length: int) -> ModelRequest:
        """The model activity's request for `agent`'s next call: its instructions rendered now
        (a supervisor's preamble first for its workers), the view it reads named by (agent
        run, log length), and the agent's model settings."""
        sup = self.team.supervisor
        instructions = spec.instructions
        if sup is not None and agent != sup.name and sup.worker_preamble:
            instructions = roster.supervisor_block(sup.name) + instructions
        instructions = roster.render_instructions(
            instructions, now=workflow.now(), agent=agent,
            supervisor=sup.name if sup else None, context=self.state.context,
        )
        info = workflow.info()
        return ModelRequest(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            agent=agent,
            model=spec.model,
            agent_run=agent_run,
            transcript_length=length,
            instructions=instructions,
            parallel_tool_calls=sup.parallel_tool_calls if sup and agent == sup.name else None,
            output_schema=spec.output_schema,
            temperature=spec.temperature,
            max_tokens=self.max_tokens,
            agent_call_index=calls_so_far,
            api="responses" if (spec.api or self.team.api) == "responses" else None,
            team=self.team.name,
        )

    def _tools_unavailable(self, agent: str, agent_run: int, model: str, reason: str) -> None:
        """The model refused tools (workflows/tool_support.py): the turn fails for an agent
        that can only hand off; else a notice, once per agent run and turn."""
        failure = handoff_only_failure(self.team, agent, model, reason)
        if failure is not None:
            raise TurnFailed(failure)
        notice = tools_unavailable_notice(self.team, agent, model, reason, agent_run)
        for m in reversed(self.transcript.log):
            if m.role == "user" and m.kind == "message":
                break
            if m.kind == "notice" and m.content == notice.content and m.agent_run == agent_run:
                return
        self.transcript.append(notice)

    async def answer_calls(
        self, agent: str, agent_run: int, msg_index: int, calls: list[ToolCall], budget: Budget
    ) -> AgentOutcome | None:
        """Answer every call with exactly one tool message, in call order, then decide what
        happens next. Independent calls run concurrently."""
        before = replace(budget)
        try:
            return await self.answering.answer(agent, agent_run, msg_index, calls, budget)
        except Interrupted:
            self.interrupted_at = self.interrupted_at or (agent, agent_run, before)
            raise


def _what(outcome: AgentOutcome) -> str:
    """What an agent's run came to, for a person at a breakpoint after it."""
    if outcome.kind == "handoff":
        return "hands off to " + ", ".join(target for target, _ in outcome.handoffs)
    if outcome.kind == "escalate":
        return f"asks for help: {outcome.text}"
    return f"answered: {outcome.text}"
