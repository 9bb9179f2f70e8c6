"""TeamWorkflow: one conversation with a team of agents (workflow id = thread id).

The routing loop reads in one screen: a user turn goes to the supervisor (or, in a swarm, to the
active agent); handoffs run worker agents, each on its own view of the transcript, and their
answers come back to the supervisor until someone gives the final answer.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import (
        breakpoints,
        definition_checks,
        inputs,
        intent_turns,
        labels,
        offered_views,
        roster,
        usage,
    )
    from . import mcp_tools as mcp
    from .agent_loop import AgentLoop, Budget, TurnFailed
    from .agent_views import ViewBuilder
    from .cancelling import TurnCancel
    from .hidden_steps import StepHiding
    from .human import HumanDesk, Interrupted
    from .intake import MAX_TURN_BYTES, Intake
    from .messages import Message, TeamSpec
    from .placement import ModelPlacement
    from .state import (
        ConversationInput,
        ConversationResult,
        ConversationState,
        ConversationStatus,
        LogPage,
        Question,
        TurnProgress,
        TurnReply,
        UserTurn,
        WaitingTools,
    )
    from .tool_calls import activity_failure_text
    from .transcript import LogDelta
    from .turn_waits import TurnWaits
    from .turns import TurnRunner

KEEP_REPLIES = 200
"""Replies (and client turn ids) kept across continue-as-new, for clients re-sending a turn."""


# Upgrade policy (docs/deployment.md, "Upgrading workers"): a change in workflows/ that alters the
# commands a recorded history issued keeps the old path behind `workflow.patched("<id>")`; the
# histories in tests/histories/ (some parked mid-wait) are 0.1.0's and must keep replaying.
@workflow.defn(name="TeamWorkflow")
class TeamWorkflow(Intake, TurnCancel, TurnWaits, StepHiding):
    """Entry points take `*extra`, which makes the SDK decode their arguments as plain JSON;
    the workflow validates them itself (workflows/inputs.py), so a malformed one is refused
    with a reason instead of failing workflow tasks forever. Clients send the declared types.
    Update and signal handlers: workflows/intake.py."""

    @workflow.init
    def __init__(self, inp: ConversationInput | None = None, *extra: object) -> None:
        try:
            inp = inputs.decode(ConversationInput, [inp, *extra], "workflow input")
            continued = workflow.info().continued_run_id is not None
            self.input_problem: str | None = None
            self.start_problem = inputs.start_problem(inp, MAX_TURN_BYTES, continued)
        except inputs.InvalidInput as err:  # `run` ends the workflow with the reason
            inp, self.input_problem, self.start_problem = ConversationInput(), str(err), None
        self.input = inp
        self.state = inp.state or ConversationState(context=dict(inp.context))
        if inp.state is None:  # a nested team opens on its parent's conversation
            for message in inp.history:
                self.state.transcript.append(message.model_copy(update={"agent_run": 0}))
        self.team: TeamSpec | None = inp.team
        self.closing = False
        self.desk = HumanDesk(self.state, 86_400.0, inp.set_search_attributes)
        self.desk.tool_specs = lambda: self.team.tools if self.team is not None else {}
        self.loop: AgentLoop | None = None
        self.placement = ModelPlacement()
        """Where this run's model calls go (workflows/placement.py); kept across its turns."""
        self.views = ViewBuilder()
        """Agents' views, built incrementally (workflows/agent_views.py); kept across turns."""
        info = workflow.info()
        self.offered = offered_views.register(info.workflow_id, info.run_id)
        """The views of this run's model calls in flight, for an activity in this process
        (workflows/offered_views.py); never read back here."""
        if inp.forked_from and inp.task is not None and info.continued_run_id is None:
            self._enqueue(UserTurn(text=inp.task))  # a fork's first turn, before any sent to it

    # ---- the routing loop -------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: ConversationInput | None = None, *extra: object) -> ConversationResult:
        problem = self.input_problem or self.start_problem
        if problem:  # ends the workflow (not its task) with the reason, at once
            raise ApplicationError(problem, type="InvalidInput", non_retryable=True)
        inp = self.input
        team = self.team = self.team or await self._resolve_team(inp.team_name or "")
        try:
            definition_checks.validate_team(team)
            if inp.state is None:  # what an endpoint would refuse
                definition_checks.check_definition(team)
        except definition_checks.TeamError as err:
            raise ApplicationError(f"Invalid team: {err}", type="InvalidTeam", non_retryable=True) from err
        if inp.set_search_attributes and inp.state is None:
            self.desk.labels = await labels.label_at_start(inp.team_name or team.name)
        await mcp.list_tools(team)  # once per conversation; recorded in the team it carries
        self.desk.timeout_seconds = min(team.ask_human_timeout_seconds, inp.idle_close_seconds or math.inf)
        self.desk.should_interrupt = lambda: self._history_is_long() and bool(
            self.loop and self.loop.interruptible)
        if (inp.task is not None or (inp.history and inp.answer_history)) and inp.state is None \
                and inp.forked_from is None:
            self._enqueue(UserTurn(text=inp.task or ""))
        while True:
            await self._wait_for_turn(inp.idle_close_seconds)
            if self.state.queue:
                number, turn = self.state.queue[0]
                try:
                    reply = await self._cancellable(number, self._run_turn(team, number, turn, self.state.in_progress))
                except Interrupted:  # long history, and an agent waits for a person
                    await self._continue_as_new()
                self.state.queue.pop(0)
                reply.usage = usage.of_turn(self.state.usage, number)
                reply.metadata = turn.metadata
                self.state.replies[number] = reply
                if inp.single_turn:
                    return self._result(reply, fail_on_error=True)
                if self._history_is_long():
                    await self._continue_as_new()
            elif self.closing:
                await workflow.wait_condition(workflow.all_handlers_finished)
                last = self.state.replies.get(self.state.turns_started)
                return self._result(last, fail_on_error=False)

    async def _wait_for_turn(self, idle_seconds: float | None) -> None:
        """Until a turn is queued or the conversation closes; `idle_seconds` without a turn
        closes it (only inputs that set it have the timer)."""
        if idle_seconds is None:
            await workflow.wait_condition(lambda: bool(self.state.queue) or self.closing)
            return
        try:
            await workflow.wait_condition(lambda: bool(self.state.queue) or self.closing,
                                          timeout=timedelta(seconds=idle_seconds), timeout_summary="idle close")
        except TimeoutError:
            self.closing = True

    async def _resolve_team(self, name: str) -> TeamSpec:
        try:
            return await workflow.execute_activity(
                "resolve_team", name, result_type=TeamSpec,
                start_to_close_timeout=timedelta(seconds=30), summary=f"team: {name}")
        except ActivityError as err:  # the reason on top, not under "Activity task failed"
            kind = getattr(err.cause, "type", None) or "TeamNotResolved"
            raise ApplicationError(activity_failure_text(err), type=kind, non_retryable=True) from err

    async def _run_turn(
        self, team: TeamSpec, number: int, turn: UserTurn, resume: TurnProgress | None
    ) -> TurnReply:
        target = resume.agent if resume and resume.direct else None
        start = len(self.state.transcript.log)  # where this turn's answers begin (a stop quotes them)
        text = ""
        if resume is None and turn.text:  # an empty turn (a nested team's) answers the history
            target, text, problem = roster.parse_mention(team, turn.text)
            self.state.transcript.append(Message(role="user", content=text, name=turn.sender))
            if problem is not None:  # an unknown @name: answered without a model call
                agent = team.supervisor.name if team.supervisor else "team"
                self.state.transcript.append(Message(role="assistant", content=problem, name=agent))
                return TurnReply(turn=number, text=problem, agent=agent)
        self.state.in_progress = None
        team, refused = breakpoints.turn_team(team, number, turn, self.state.transcript)
        if refused is not None:
            return refused
        loop = self.loop = AgentLoop(team, self.state, self.desk, self.placement, self.views, self.offered,
                                     turn.max_tokens)
        budget = Budget(resume.model_calls, resume.handoffs, resume.tool_calls) if resume else Budget()
        self.turn_budget = budget  # what cancel_turn spends (workflows/cancelling.py)
        turns = TurnRunner(loop, budget, resume)
        try:
            # ABI's intents, before any model call: only in teams that declare them
            matched = await intent_turns.answer_by_intent(turns, target, text) if (
                text and intent_turns.declared(team)) else None
            if matched is not None:
                outcome = matched
            elif target is not None:
                outcome = await turns.direct(target)
            elif team.supervisor:
                outcome = await turns.supervise()
            else:
                outcome = await turns.swarm()
        except TurnFailed as err:
            agent = self.state.active_agent or (team.supervisor.name if team.supervisor else "team")
            self.state.transcript.append(
                Message(role="assistant", content=str(err), name=agent, kind="error"))
            return TurnReply(turn=number, text=str(err), agent=agent, status="failed")
        except Interrupted:
            assert loop.interrupted_at is not None
            agent, agent_run, spent = loop.interrupted_at
            self.state.in_progress = TurnProgress(
                turn=number, agent=agent, agent_run=agent_run, direct=agent in (target, turns.intent_agent) and agent_run != 0,
                model_calls=spent.model_calls, handoffs=spent.handoffs, tool_calls=spent.tool_calls)
            raise
        if outcome.kind == "budget":  # with what was answered before the stop
            log = self.state.transcript.log
            if resume is not None:  # continued as new in the middle of the turn
                start = usage.request_index(log, bool(turn.text))
            answered = usage.last_answer(log, start)
            return TurnReply(turn=number, text=usage.stopped_text(outcome.text, answered),
                             agent=outcome.agent, status="budget_exceeded", before_stop=answered)
        if outcome.kind == "stopped":  # by a person, at a breakpoint (workflows/breakpoints.py)
            return TurnReply(turn=number, text=outcome.text, agent=outcome.agent, status="cancelled")
        return TurnReply(turn=number, text=outcome.text, agent=outcome.agent,
                         status=outcome.flag or "completed", structured=outcome.structured)

    # ---- continue-as-new --------------------------------------------------------------------

    def _history_is_long(self) -> bool:
        assert self.team is not None
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self.team.continue_as_new_after_events
            or info.get_current_history_size() >= self.team.continue_as_new_after_bytes
        )

    async def _continue_as_new(self) -> NoReturn:
        """Carry the whole conversation into a fresh run with the same workflow id.

        Queued turns, and the turn cut off while it waits for a person, go with the state; the
        next run answers them, and clients read their replies from it (`turn_replies`).
        """
        state = self.state
        state.runs += 1
        keep_from = state.turns_started - KEEP_REPLIES
        state.replies = {n: r for n, r in state.replies.items() if n > keep_from}
        state.turn_ids = {t: n for t, n in state.turn_ids.items() if n > keep_from}
        workflow.continue_as_new(self.input.model_copy(update={
            "team": self.team, "task": None, "history": [], "state": state}))

    def _result(self, reply: TurnReply | None, fail_on_error: bool) -> ConversationResult:
        if reply is None:
            reply = TurnReply(turn=0, text="", agent="", status="completed")
        if fail_on_error and reply.status == "failed":
            raise ApplicationError(reply.text, type="TurnFailed", non_retryable=True)
        return ConversationResult(
            answer=reply.text, agent=reply.agent, status=reply.status,
            turns=self.state.turns_started, model_calls=self.state.total_model_calls,
            structured=reply.structured, runs=self.state.runs, context=dict(self.state.context),
            usage=self.state.usage, before_stop=reply.before_stop,
        )

    # ---- queries ----------------------------------------------------------------------------

    @workflow.query
    def pending_questions(self) -> list[Question]:
        return list(self.state.pending.values())

    @workflow.query
    def transcript(self, full: bool = False, start: int = 0) -> list[Message]:
        """The shared conversation, with notes for people (kind "notice": refused signals);
        `full=True` adds every agent's private working messages. `start`: from that index on
        (a reader that holds the messages before it reads only what came after)."""
        if full:
            return self.state.transcript.log[max(start, 0):]
        return self.state.transcript.view(
            0, handoffs=roster.handoff_view(self.team) if self.team else "own", notices=True)[max(start, 0):]

    @workflow.query
    def log_page(self, start: int, limit: int = 200) -> LogPage:
        """The whole log (every agent's steps) from `start`, at most `limit` messages: how a
        follower reads a conversation as it happens (`durable_teams.client.events.follow`). Indices
        hold across continue-as-new; paged because the server caps a query result at 2 MB."""
        log = self.state.transcript.log
        end = start + max(limit, 0)
        shared = sorted(i for i in self.state.transcript.shared if start <= i < end)
        return LogPage(start=start, messages=log[start:end], total=len(log), shared=shared,
                       history_length=workflow.info().get_current_history_length())

    @workflow.query
    def status(self) -> ConversationStatus:
        last = self.state.replies.get(max(self.state.replies, default=0))
        return ConversationStatus(
            active_agent=self.state.active_agent, turns=self.state.turns_started,
            model_calls=self.state.total_model_calls, pending=list(self.state.pending.values()),
            queued_turns=len(self.state.queue), last_reply=last, closed=self.closing,
            ignored_replies=list(self.state.ignored_replies), last_decision=self.state.last_decision,
            children=list(self.loop.children.values()) if self.loop else [],
            refused_signals=list(self.state.refused_signals),
            refused_signal_count=self.state.refused_signal_count,
            usage=self.state.usage, last_input_id=self.state.last_input_id,
            previous_input_id=self.state.previous_input_id, forked_from=self.input.forked_from,
            hidden_steps=list(self.state.hidden_steps),
            history_length=workflow.info().get_current_history_length(),
        )

    @workflow.query
    def waiting_tools(self, agent: str) -> WaitingTools:
        """`agent`'s tools that wait for a person as the team defines them: those that need
        approval, and those (activities, not handoffs or built-ins) that pause at a breakpoint
        before or after they run. Fixed by the team: what any client shows as a step that
        waits for a person."""
        team = self.team
        if team is None or agent not in team.agents:
            return WaitingTools()
        approval = [t.name for t in roster.agent_tools(team, agent) if t.needs_approval]
        if not breakpoints.declared(team):
            return WaitingTools(approval=approval)
        return WaitingTools(approval=approval, breakpoint=[
            t for t in team.agents[agent].tools if t in team.tools
            and any(breakpoints.pauses(team, when, agent, t) for when in ("before", "after"))])

    @workflow.query
    def model_view_delta(self, agent: str, agent_run: int, upto: int, log_start: int,
                         shared_start: int, with_tools: bool) -> LogDelta:
        """`model_view` for a reader already holding `log[:log_start]` and
        `shared[:shared_start]` (the model activity's per-worker cache): returns a
        `transcript.LogDelta` with only what it lacks, so a model call costs O(new messages)
        here instead of O(transcript)."""
        assert self.team is not None
        return self.state.transcript.delta(
            log_start, shared_start, upto, handoffs=roster.handoff_view(self.team),
            tools=roster.agent_tools(self.team, agent) if with_tools else None)
