"""A turn answered by an intent (workflows/intents.py), before any model call.

Only for teams that declare intents (`declared`): other teams' turns, and every recorded
history, run exactly as before. The person's message is matched against the intents of the
team and of the agent that would take the turn (in a supervisor team, every worker's too);
a match is recorded in the transcript (a "routing" message the event stream shows) and in the
workflow's memo (a memo change in the Web UI's history), then acted on: a fixed answer, a tool
call (an activity, its result the answer), or the agent the turn goes to.
"""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from .agent_loop import AgentOutcome
    from .intents import (
        Candidates,
        IntentMatch,
        match_exact,
        match_similar,
        phrases_of,
        record_text,
    )
    from .messages import Message, TeamSpec, ToolCall
    from .tool_calls import activity_failure_text
    from .turns import TurnRunner

EMBED_ACTIVITY = "embed_texts"
NFKC_PATCH = "intents-match-nfkc"
"""Phrases matched after NFKC (fullwidth letters match): see `matched_exactly`."""


def declared(team: TeamSpec) -> bool:
    """Whether the team or any of its agents declares intents."""
    return bool(team.intents) or any(a.intents for a in team.agents.values())


def first_agent(team: TeamSpec, active: str | None, target: str | None) -> str:
    """The agent the person's message reaches first: the `@mentioned` one, the supervisor, or
    a swarm's active agent."""
    if target is not None:
        return target
    if team.supervisor is not None:
        return team.supervisor.name
    return active or team.start_agent or next(iter(team.agents))


def candidates(team: TeamSpec, first: str, mentioned: bool) -> Candidates:
    """(owner, intent) in the order they are tried: the team's (owned by the agent taking the
    turn), that agent's own, then, when a supervisor takes it, each worker's."""
    out = [(first, i) for i in team.intents]
    if first in team.agents:
        out += [(first, i) for i in team.agents[first].intents]
    if team.supervisor is not None and not mentioned:
        out += [(a, i) for a in team.supervisor.agents for i in team.agents[a].intents]
    return out


async def answer_by_intent(runner: TurnRunner, target: str | None, text: str) -> AgentOutcome | None:
    """The turn's outcome when the message matches an intent; None to go on as usual."""
    team, transcript = runner.team, runner.transcript
    first = first_agent(team, runner.state.active_agent, target)
    found = candidates(team, first, target is not None)
    match = matched_exactly(found, text) if found else None
    if match is None and found and team.intent_similarity is not None:
        match = await _match_by_meaning(runner, found, text, first)
    if match is None:
        return None
    owner, intent = match.owner, match.intent
    transcript.append(Message(role="assistant", name=owner, kind="routing", content=record_text(match)))
    workflow.upsert_memo({"last_intent": _memo(match)})
    if intent.answer is not None:
        transcript.append(Message(role="assistant", name=owner, content=intent.answer))
        return AgentOutcome("answer", owner, intent.answer)
    if intent.tool is not None:
        call = ToolCall(id=f"intent_{len(transcript.log)}", name=intent.tool,
                        arguments=json.dumps(intent.arguments))
        index = transcript.append(Message(role="assistant", name=owner, tool_calls=[call]))
        runner.budget.tool_calls += 1
        result = await runner.loop.tools.run(owner, 0, index, call)
        transcript.append(result)
        return AgentOutcome("answer", owner, result.content or "")
    assert intent.agent is not None
    runner.intent_agent = intent.agent
    return await runner.direct(intent.agent)


def matched_exactly(found: Candidates, text: str) -> IntentMatch | None:
    """The exact match, phrases and message compared after NFKC. A conversation that ran
    before NFKC replays as it ran: the patch marker is asked for only when NFKC changes the
    outcome (a message or phrase with compatibility characters), so every other turn, and every
    recorded history, takes the same path with no marker."""
    match = match_exact(found, text)
    before = match_exact(found, text, compatibility=False)
    if match == before:
        return match
    return match if workflow.patched(NFKC_PATCH) else before


async def _match_by_meaning(runner: TurnRunner, found: Candidates, text: str, first: str) -> IntentMatch | None:
    """Embed the message and the phrases (an activity), compare here. An endpoint that fails
    leaves a notice and the turn goes on to the model."""
    similarity = runner.team.intent_similarity
    assert similarity is not None
    phrases = phrases_of(found)
    try:
        vectors = await workflow.execute_activity(
            EMBED_ACTIVITY, args=[similarity.model, [text, *phrases]], result_type=list[list[float]],
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=3), summary=f"intents: embed {len(phrases) + 1} texts")
    except ActivityError as err:
        runner.transcript.append(Message(
            role="system", name=first, kind="notice",
            content=f"Intents were matched exactly only: the embeddings call failed ({activity_failure_text(err)})."))
        return None
    if len(vectors) != len(phrases) + 1:
        return None
    return match_similar(found, vectors[0], vectors[1:], similarity.threshold)


def _memo(match: IntentMatch) -> dict[str, str]:
    return {"agent": match.owner, "phrase": match.phrase, "how": match.how, "action": match.intent.action}
