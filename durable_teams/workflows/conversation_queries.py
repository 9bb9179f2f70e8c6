"""The conversation's queries (a mixin of `TeamWorkflow`, like intake.py): what a client reads
of it without changing it, its questions, transcript, log, status, an agent's tools that wait
for a person, and a model call's view. Queries issue no command: moving them changes no
history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from . import breakpoints, roster
    from .conversation_reads import ConversationStatus, LogPage, WaitingTools
    from .messages import Message, TeamSpec
    from .state import ConversationInput, ConversationState, Question
    from .stream_writes import shared_with_writes
    from .transcript import LogDelta
    from .usage import current_turn

if TYPE_CHECKING:
    from .agent_loop import AgentLoop


class ConversationQueries:
    """The queries, over the conversation's state (`TeamWorkflow` sets the attributes)."""

    state: ConversationState
    input: ConversationInput
    team: TeamSpec | None
    loop: AgentLoop | None
    closing: bool

    @workflow.query
    def pending_questions(self) -> list[Question]:
        return list(self.state.pending.values())

    @workflow.query
    def transcript(self, full: bool = False, start: int = 0, writes: bool = False) -> list[Message]:
        """The shared conversation, with notes for people (kind "notice": refused signals);
        `full=True` adds every agent's private working messages. `start`: from that index on
        (a reader that holds the messages before it reads only what came after). `writes`:
        with what workers' tools wrote to their stream writers (the LangGraph door's `custom`)."""
        if full:
            return self.state.transcript.log[max(start, 0):]
        handoffs = roster.handoff_view(self.team) if self.team else "own"
        if writes:
            return shared_with_writes(self.state.transcript, handoffs)[max(start, 0):]
        return self.state.transcript.view(0, handoffs=handoffs, notices=True)[max(start, 0):]

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
            working_turn=current_turn(self.state.queue, self.state.turns_started),
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
