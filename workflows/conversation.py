"""TeamWorkflow: one conversation with a team of agents (workflow id = thread id).

The routing loop reads in one screen: a user turn goes to the supervisor (or, in a swarm, to the
active agent); handoffs run worker agents, each on its own view of the transcript, and their
answers come back to the supervisor until someone gives the final answer.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows import team as teams
    from workflows.agent_loop import AgentLoop, AgentOutcome, Budget, TurnFailed
    from workflows.handoff import handoff_back_messages
    from workflows.human import HumanDesk, reply_problem
    from workflows.messages import Message, ModelView, TeamSpec
    from workflows.state import (
        AnswerAck,
        ConversationInput,
        ConversationResult,
        ConversationState,
        ConversationStatus,
        HumanReply,
        Question,
        TurnReply,
        TurnStatus,
        UserTurn,
    )

MAX_TURN_BYTES = 256 * 1024


@workflow.defn(name="TeamWorkflow")
class TeamWorkflow:
    @workflow.init
    def __init__(self, inp: ConversationInput) -> None:
        self.input = inp
        self.state = inp.state or ConversationState(context=dict(inp.context))
        self.team: TeamSpec | None = inp.team
        self.closing = False
        self.desk = HumanDesk(self.state, 86_400.0, inp.set_search_attributes)

    # ---- the routing loop -------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: ConversationInput) -> ConversationResult:
        team = self.team = self.team or await workflow.execute_activity(
            "resolve_team", inp.team_name or "", result_type=TeamSpec,
            start_to_close_timeout=timedelta(seconds=30), summary=f"team: {inp.team_name}")
        try:
            teams.validate_team(team)
        except teams.TeamError as err:
            raise ApplicationError(f"Invalid team: {err}", type="InvalidTeam", non_retryable=True) from err
        self.desk.timeout_seconds = team.ask_human_timeout_seconds
        if inp.task is not None and inp.state is None:
            self._enqueue(UserTurn(text=inp.task))
        while True:
            await workflow.wait_condition(lambda: bool(self.state.queue) or self.closing)
            if self.state.queue:
                number, turn = self.state.queue[0]
                reply = await self._run_turn(team, number, turn)
                self.state.queue.pop(0)
                self.state.replies[number] = reply
                if inp.single_turn:
                    return self._result(reply, fail_on_error=True)
            elif self.closing:
                await workflow.wait_condition(workflow.all_handlers_finished)
                last = self.state.replies.get(self.state.turns_started)
                return self._result(last, fail_on_error=False)

    async def _run_turn(self, team: TeamSpec, number: int, turn: UserTurn) -> TurnReply:
        self.state.transcript.append(Message(role="user", content=turn.text, name=turn.sender))
        loop = AgentLoop(team, self.state, self.desk)
        budget = Budget()
        try:
            outcome = await (self._supervise(loop, budget) if team.supervisor else self._swarm(loop, budget))
        except TurnFailed as err:
            agent = self.state.active_agent or (team.supervisor.name if team.supervisor else "team")
            self.state.transcript.append(
                Message(role="assistant", content=str(err), name=agent, kind="error"))
            return TurnReply(turn=number, text=str(err), agent=agent, status="failed")
        status: TurnStatus = "budget_exceeded" if outcome.kind == "budget" else "completed"
        return TurnReply(turn=number, text=outcome.text, agent=outcome.agent, status=status,
                         structured=outcome.structured)

    async def _supervise(self, loop: AgentLoop, budget: Budget) -> AgentOutcome:
        sup = loop.team.supervisor
        assert sup is not None
        transcript = self.state.transcript
        while True:
            outcome = await loop.run(sup.name, 0, budget)
            if outcome.kind == "forward":  # the worker's message, verbatim, is the answer
                transcript.append(Message(role="assistant", content=outcome.text, name=sup.name))
                return outcome
            if outcome.kind != "handoff":
                return outcome
            runs = [transcript.start_run(agent, call.id) for agent, call in outcome.handoffs]
            for run in runs:
                self.state.assignments[run.agent] = self.state.assignments.get(run.agent, 0) + 1
            # Workers run concurrently, each on its own view; results fold back in call order.
            results = await asyncio.gather(*(loop.run(r.agent, r.id, budget) for r in runs))
            for run in runs:
                transcript.finish_run(run.id, sup.output_mode)
                if sup.add_handoff_back_messages:
                    for message in handoff_back_messages(run.agent, sup.name, f"back_{run.id}"):
                        transcript.append(message)
            stopped = [r for r in results if r.kind == "budget"]
            if stopped:
                return stopped[0]

    async def _swarm(self, loop: AgentLoop, budget: Budget) -> AgentOutcome:
        team = loop.team
        agent = self.state.active_agent or team.start_agent or next(iter(team.agents))
        while True:
            self.state.active_agent = agent
            outcome = await loop.run(agent, 0, budget)
            if outcome.kind != "handoff":
                return outcome
            agent = outcome.handoffs[0][0]

    # ---- turns ------------------------------------------------------------------------------

    def _enqueue(self, turn: UserTurn) -> int:
        self.state.turns_started += 1
        self.state.queue.append((self.state.turns_started, turn))
        return self.state.turns_started

    def _result(self, reply: TurnReply | None, fail_on_error: bool) -> ConversationResult:
        if reply is None:
            reply = TurnReply(turn=0, text="", agent="", status="completed")
        if fail_on_error and reply.status == "failed":
            raise ApplicationError(reply.text, type="TurnFailed", non_retryable=True)
        return ConversationResult(
            answer=reply.text, agent=reply.agent, status=reply.status,
            turns=self.state.turns_started, model_calls=self.state.total_model_calls,
            structured=reply.structured,
        )

    def _turn_problem(self, turn: UserTurn) -> str | None:
        if self.closing:
            return "the conversation is closed"
        if not turn.text.strip():
            return "the message is empty"
        if len(turn.text.encode()) > MAX_TURN_BYTES:
            return f"the message is over {MAX_TURN_BYTES:,} bytes"
        return None

    @workflow.update
    async def send_message(self, turn: UserTurn) -> TurnReply:
        """Send a user turn and wait for the team's reply to it. Turns queue in order."""
        number = self._enqueue(turn)
        await workflow.wait_condition(lambda: number in self.state.replies)
        return self.state.replies[number]

    @send_message.validator
    def _validate_send_message(self, turn: UserTurn) -> None:
        problem = self._turn_problem(turn)
        if problem:
            raise ApplicationError(problem, type="TurnRejected")

    @workflow.signal
    def post_message(self, turn: UserTurn) -> None:
        """Fire-and-forget form of `send_message`."""
        problem = self._turn_problem(turn)
        if problem:
            workflow.logger.warning("Ignored message: %s", problem)
            return
        self._enqueue(turn)

    @workflow.signal
    def close(self) -> None:
        """End the conversation once queued turns are answered."""
        self.closing = True

    # ---- the person in the loop -------------------------------------------------------------

    @workflow.signal
    def human_reply(self, reply: HumanReply) -> None:
        """Answer a pending question; stale or unknown ids are recorded and ignored."""
        self.desk.receive(reply)

    @workflow.update
    def answer(self, reply: HumanReply) -> AnswerAck:
        """Answer a pending question and learn at once whether it was accepted."""
        self.desk.receive(reply)
        return AnswerAck(question_id=reply.question_id)

    @answer.validator
    def _validate_answer(self, reply: HumanReply) -> None:
        problem = reply_problem(self.state, reply)
        if problem:
            raise ApplicationError(problem, type="AnswerRejected")

    # ---- queries ----------------------------------------------------------------------------

    @workflow.query
    def pending_questions(self) -> list[Question]:
        return list(self.state.pending.values())

    @workflow.query
    def transcript(self, full: bool = False) -> list[Message]:
        """The shared conversation; `full=True` adds every agent's private working messages."""
        if full:
            return list(self.state.transcript.log)
        sup = self.team.supervisor if self.team else None
        return self.state.transcript.view(0, show_handoffs=sup.add_handoff_messages if sup else True)

    @workflow.query
    def status(self) -> ConversationStatus:
        last = self.state.replies.get(max(self.state.replies, default=0))
        return ConversationStatus(
            active_agent=self.state.active_agent, turns=self.state.turns_started,
            model_calls=self.state.total_model_calls, pending=list(self.state.pending.values()),
            queued_turns=len(self.state.queue), last_reply=last, closed=self.closing,
            ignored_replies=list(self.state.ignored_replies),
        )

    @workflow.query
    def model_view(self, agent: str, view_id: int, upto: int) -> ModelView:
        """What `call_model` sends to the model: read by the activity, so the transcript never
        enters history as activity input (each message is recorded once)."""
        assert self.team is not None
        sup = self.team.supervisor
        show = sup.add_handoff_messages if sup else True
        return ModelView(
            messages=self.state.transcript.view(view_id, upto, show_handoffs=show),
            tools=teams.agent_tools(self.team, agent),
        )
