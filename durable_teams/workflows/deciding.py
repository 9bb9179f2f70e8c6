"""The "llm-decision" strategy: the supervisor's model answers with a JSON routing decision.

AgentForge's shape. The supervisor may first use its own tools (`ask_human` above all: "what
is your order number?") for a bounded number of rounds, then must answer
`{target, reasoning, confidence}`. An unusable answer (not JSON, not an agent of the team) is
sent back with the reason a bounded number of times; after that the turn fails with a message
the user can read, never an endless loop.

The supervisor decides in an agent run of its own (a private scope), so failed attempts and
the router's feedback never reach the workers. What its tools learned (a person's answers) is
folded into the shared conversation with the decision, so the chosen agent sees it too.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from . import decision_format
    from .agent_loop import AgentLoop, AgentOutcome, Budget, TurnFailed
    from .messages import Message, RoutingDecision
    from .transcript import AgentRun

ROUTER = "router"
"""The `name` on feedback messages: the routing machinery, not the person."""


async def decide_with_model(
    loop: AgentLoop, budget: Budget, run: AgentRun, resuming: bool
) -> RoutingDecision | AgentOutcome:
    """Call the supervisor until it gives a usable decision (or an outcome that ends the turn:
    out of budget, a return_direct tool). Counters are read from the run's own messages, so a
    decision resumed after continue-as-new keeps its rounds and retries."""
    sup = loop.team.supervisor
    assert sup is not None
    transcript = loop.transcript
    if resuming:
        outcome = await loop.resume_calls(sup.name, run.id, budget)
        if outcome is not None:
            return outcome
    while True:
        own = [transcript.log[i] for i in transcript.run_messages(run.id)]
        rounds = sum(1 for m in own if m.role == "assistant" and m.tool_calls and m.kind != "routing")
        retries = sum(1 for m in own if m.role == "user" and m.kind == "routing")
        stopped = loop.budget_stop(sup.name, run.id, budget)
        if stopped is not None:
            return stopped
        message, _, _ = await loop.call_model(sup.name, run.id, budget)
        if message.tool_calls and rounds < sup.decision_max_tool_rounds:
            index = transcript.append(message)
            outcome = await loop.answer_calls(sup.name, run.id, index, message.tool_calls, budget)
            if outcome is not None:
                return outcome
            continue
        # An attempt at deciding: kept in the supervisor's scope only (kind "routing").
        transcript.append(message.model_copy(update={"kind": "routing"}))
        if message.tool_calls:  # out of tool rounds; every call still gets its answer
            for call in message.tool_calls:
                transcript.append(Message(
                    role="tool", name=call.name, tool_call_id=call.id, agent_run=run.id, kind="routing",
                    content=f"Not run: the {sup.decision_max_tool_rounds} tool rounds before a "
                            "routing decision are used up."))
            problem = decision_format.decision_feedback("No more tool calls: decide now", sup.agents)
        else:
            parsed = decision_format.parse_decision(message.content, sup.agents)
            if isinstance(parsed, RoutingDecision):
                return parsed
            problem = parsed
        if retries >= sup.decision_max_retries:
            raise TurnFailed(
                f"The supervisor {sup.name} gave no usable routing decision in {retries + 1} "
                f"attempts. Last problem: {problem}")
        transcript.append(Message(role="user", content=problem, name=ROUTER, agent_run=run.id, kind="routing"))


def fold_decision_run(loop: AgentLoop, run: AgentRun) -> None:
    """Share what the supervisor's tools learned (calls and answers), not its attempts."""
    loop.transcript.finish_run(run.id, "full_history", unshared={"routing"})
