"""Who answers one user turn, and in what order: the team's routing loop.

- `supervise`: langgraph-supervisor's shape. The supervisor's model calls `transfer_to_<agent>`
  tools; the workers run (concurrently when it calls several), their answers fold back into the
  shared conversation, and the supervisor goes on until it answers.
- `route`: AgentForge's shape, for every other strategy. A decision (a pure strategy, or the
  supervisor's JSON answer under "llm-decision") picks one agent, is recorded, and that
  agent's answer is the turn's answer.
- `direct`: `@agent` in the user's message; that agent answers on its own view.
- `swarm`: no supervisor. The active agent answers, or hands the conversation to a peer, which
  stays active for the next turn.

A turn cut off by continue-as-new (an agent waiting for a person) resumes where it stood: the
`TurnProgress` names the agent run to pick up, and is used once.
"""

from __future__ import annotations

import asyncio
import json

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from . import roster, routing
    from .agent_loop import AgentLoop, AgentOutcome, Budget
    from .children import run_child
    from .deciding import decide_with_model, fold_decision_run
    from .handoff import handoff_back_messages
    from .messages import Message, RoutingDecision, ToolCall
    from .roster import runs_as_child
    from .state import TurnProgress
    from .transcript import AgentRun


class TurnRunner:
    def __init__(self, loop: AgentLoop, budget: Budget, resume: TurnProgress | None) -> None:
        self.loop = loop
        self.budget = budget
        self.resume = resume
        self.team = loop.team
        self.state = loop.state
        self.transcript = loop.state.transcript
        self.intent_agent: str | None = None
        """The agent an intent gave the turn to (workflows/intent_turns.py): its run is resumed
        as an `@mention`'s is, its answer the turn's."""

    def _take_resume(self) -> TurnProgress | None:
        """The progress to resume from, handed out once: later agent runs start fresh."""
        resume, self.resume = self.resume, None
        return resume

    def _start(self, agent: str, handoff_call_id: str | None) -> AgentRun:
        self.state.assignments[agent] = self.state.assignments.get(agent, 0) + 1
        return self.transcript.start_run(agent, handoff_call_id)

    async def _run_worker(self, run: AgentRun, resuming: bool, share: int = 1) -> AgentOutcome:
        """One worker's run on its own view: in this workflow, or, for a nested team or an
        agent marked `run_as_child`, in a child workflow (never resumed: the run does not
        continue as new while a child runs) that gets a `share` of the turn's token budgets."""
        if runs_as_child(self.team, run.agent):
            with self.loop.span(run.agent, run.id):
                return await run_child(self.loop, run, share)
        return await self.loop.run(run.agent, run.id, self.budget, resume=resuming)

    async def supervise(self) -> AgentOutcome:
        sup = self.team.supervisor
        assert sup is not None
        if sup.strategy != "llm":
            return await self.route()
        resume = self._take_resume()
        resuming = resume is not None
        # A resumed turn goes on where it stood: in the supervisor's own loop, or in a worker's.
        runs = [self.transcript.runs[resume.agent_run]] if resume and resume.agent_run else []
        while True:
            if not runs:
                outcome = await self.loop.run(sup.name, 0, self.budget, resume=resuming)
                resuming = False
                if outcome.kind == "forward":  # the worker's message, verbatim, is the answer
                    self.transcript.append(Message(role="assistant", content=outcome.text, name=sup.name))
                    return outcome
                if outcome.kind != "handoff":
                    return outcome
                runs = [self._start(agent, call.id) for agent, call in outcome.handoffs]
            # Workers run concurrently, each on its own view; results fold back in call order.
            self.loop.in_fanout = len(runs) > 1
            results = await asyncio.gather(*(self._run_worker(r, resuming, len(runs)) for r in runs))
            self.loop.in_fanout = False
            resuming = False
            for run in runs:
                self.transcript.finish_run(run.id, sup.output_mode)
                if sup.add_handoff_back_messages:
                    for message in handoff_back_messages(run.agent, sup.name, f"back_{run.id}"):
                        self.transcript.append(message)
            stopped = [r for r in results if r.kind in ("budget", "stopped")]
            if stopped:
                return stopped[0]
            if sup.aggregate is not None:
                return await self._aggregate(runs, results)
            runs = []

    async def _aggregate(self, runs: list[AgentRun], results: list[AgentOutcome]) -> AgentOutcome:
        """The final answer from the answers of one reply's handoffs, in call order, without
        another supervisor model call."""
        sup = self.team.supervisor
        assert sup is not None and sup.aggregate is not None
        answers = [{"agent": run.agent, "answer": r.text} for run, r in zip(runs, results, strict=True)]
        if sup.aggregate == roster.CONCATENATE:
            text = "\n\n".join(f"{a['agent']}: {a['answer']}" for a in answers)
        else:  # the team's own function, as a tool activity (retries, timeout, size guard)
            call = ToolCall(id=f"aggregate_{runs[0].id}", name=sup.aggregate,
                            arguments=json.dumps({"results": answers}))
            message = await self.loop.tools.run(sup.name, 0, len(self.transcript.log), call)
            text = message.content or ""
        self.transcript.append(Message(role="assistant", content=text, name=sup.name))
        return AgentOutcome("answer", sup.name, text)

    async def route(self) -> AgentOutcome:
        """Decide who handles the turn, record the decision, and let that agent answer it."""
        sup = self.team.supervisor
        assert sup is not None
        resume = self._take_resume()
        resuming = resume is not None
        run = self.transcript.runs[resume.agent_run] if resume and resume.agent_run else None
        if run is None or run.agent == sup.name:  # not decided yet (or cut off while deciding)
            decided = await self._decide(run, resuming)
            if isinstance(decided, AgentOutcome):
                return decided
            run, resuming = self._start(decided.target, None), False
        outcome = await self._run_worker(run, resuming)
        self.transcript.finish_run(run.id, sup.output_mode)
        if outcome.kind != "escalate":
            return outcome
        # request_help: a model can choose again (within the handoff budget); a fixed strategy
        # would only choose the same way, so the turn ends with the worker's reason.
        if sup.strategy == "llm-decision" and self.budget.handoffs < self.team.budgets.max_handoffs:
            self.budget.handoffs += 1
            return await self.route()
        text = f"{run.agent} could not handle this: {outcome.text}"
        self.transcript.append(Message(role="assistant", content=text, name=sup.name))
        return AgentOutcome("answer", sup.name, text)

    async def _decide(self, run: AgentRun | None, resuming: bool) -> RoutingDecision | AgentOutcome:
        sup = self.team.supervisor
        assert sup is not None
        if sup.strategy == "llm-decision":
            run = run or self.transcript.start_run(sup.name, None)
            decided = await decide_with_model(self.loop, self.budget, run, resuming)
            fold_decision_run(self.loop, run)
        else:  # a pure function of the conversation: no model call
            decided = routing.route(
                self.team, routing.latest_user_text(self.transcript.shared_messages()),
                decisions_so_far=self.state.routing_decisions, assignments=self.state.assignments)
        if isinstance(decided, RoutingDecision):
            self.state.routing_decisions += 1
            self.state.last_decision = decided
            self.transcript.append(routing.routing_record(decided, sup.name))
            # Readable in the history too (a memo change event), not only through a query.
            workflow.upsert_memo({"last_routing": decided.model_dump(mode="json")})
        return decided

    async def direct(self, agent: str) -> AgentOutcome:
        """`@agent` in a supervisor team: that agent answers the turn on its own view."""
        sup = self.team.supervisor
        if sup is None:  # a swarm: the mentioned agent becomes the active one
            self.state.active_agent = agent
            return await self.swarm()
        resume = self._take_resume()
        run = self.transcript.runs[resume.agent_run] if resume else self._start(agent, None)
        outcome = await self._run_worker(run, resuming=resume is not None)
        self.transcript.finish_run(run.id, sup.output_mode)
        if outcome.kind == "escalate":  # request_help: the supervisor takes it from here
            return await self.supervise()
        return outcome

    async def swarm(self) -> AgentOutcome:
        agent = self.state.active_agent or self.team.start_agent or next(iter(self.team.agents))
        resuming = self._take_resume() is not None
        while True:
            self.state.active_agent = agent
            outcome = await self.loop.run(agent, 0, self.budget, resume=resuming)
            resuming = False
            if outcome.kind != "handoff":
                return outcome
            agent = outcome.handoffs[0][0]
