"""Routing strategies: which worker a supervisor engages next. Pure functions, no Temporal.

Four strategies need no model at all, and take no model argument, so that is checkable:

- `rules`: ordered rules (keywords or regular expressions over the user's message) -> agent;
- `skills`: each agent scored by how many of its declared skills the message names;
- `round-robin`: the n-th routing decision of the conversation goes to agent n mod len(agents);
- `load-balanced`: the agent with the fewest assignments so far in the conversation.

`rules` and `skills` fall back to `fallback_agent` (or the first agent) when nothing matches.
Ties always go to the agent listed first in the supervisor, so a replay decides the same.

The other two strategies call the supervisor's model: `llm` through handoff tools (the agent
loop, workflows/agent_loop.py), `llm-decision` with a JSON decision (its pure part, the
instructions, schema and parsing, is workflows/decision_format.py; its loop is
workflows/deciding.py). This module also checks a team's routing options (`strategy_problems`).

Every strategy but `llm` ends in a `RoutingDecision` (target, strategy, reasoning, confidence);
`routing_record` makes the transcript message (kind="routing") that records it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .messages import (
    AgentSpec,
    Message,
    RoutingDecision,
    RoutingRule,
    Strategy,
    SupervisorSpec,
    TeamSpec,
)

MODEL_FREE: tuple[Strategy, ...] = ("rules", "skills", "round-robin", "load-balanced")
"""Strategies that decide without calling a model."""


# ---- matching text -------------------------------------------------------------------------


def keyword_pattern(phrase: str) -> re.Pattern[str]:
    """A case-insensitive, whole-word pattern for a keyword or phrase.

    Words of a phrase may be separated by any whitespace; the phrase may end in -s or -es
    (`invoice` matches "invoices"), but never runs into a longer word (`bill` does not match
    "billing"). Works for keywords that start or end with punctuation, such as `c++`.
    """
    words = phrase.split()
    if not words:
        raise ValueError("a keyword must not be empty")
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?:e?s)?(?!\w)", re.IGNORECASE)


def rule_pattern(rule: RoutingRule) -> re.Pattern[str] | None:
    """The rule's regular expression, compiled case-insensitively (re.error if invalid)."""
    return re.compile(rule.pattern, re.IGNORECASE) if rule.pattern else None


def rule_match(rule: RoutingRule, text: str) -> str | None:
    """What made `rule` match `text` (for the decision's reasoning), or None."""
    for keyword in rule.keywords:
        if keyword_pattern(keyword).search(text):
            return f"keyword {keyword!r}"
    pattern = rule_pattern(rule)
    if pattern is not None:
        found = pattern.search(text)
        if found:
            return f"pattern /{rule.pattern}/ (matched {found.group(0)!r})"
    return None


def skills_matched(skills: Sequence[str], text: str) -> list[str]:
    """The distinct skills (compared case-insensitively) that `text` names, in declared order."""
    seen: set[str] = set()
    out: list[str] = []
    for skill in skills:
        key = " ".join(skill.lower().split())
        if key and key not in seen and keyword_pattern(skill).search(text):
            seen.add(key)
            out.append(skill)
    return out


# ---- strategies that call no model ---------------------------------------------------------


def fallback_decision(
    agents: Sequence[str], fallback_agent: str | None, strategy: Strategy, why: str
) -> RoutingDecision:
    """Nothing decided: the fallback agent, or the first agent, with confidence 0."""
    if not agents:
        raise ValueError("a supervisor needs at least one agent to route to")
    if fallback_agent:
        return RoutingDecision(target=fallback_agent, strategy=strategy, confidence=0.0,
                               reasoning=f"{why}; routed to the fallback agent {fallback_agent}")
    return RoutingDecision(target=agents[0], strategy=strategy, confidence=0.0,
                           reasoning=f"{why}; routed to the first agent, {agents[0]}")


def route_by_rules(
    message: str, rules: Sequence[RoutingRule], agents: Sequence[str], fallback_agent: str | None = None
) -> RoutingDecision:
    """The first rule that matches `message` decides (confidence 1); else the fallback."""
    for number, rule in enumerate(rules, start=1):
        hit = rule_match(rule, message)
        if hit is not None:
            return RoutingDecision(target=rule.target, strategy="rules", confidence=1.0,
                                   reasoning=f"rule {number} matched {hit}")
    return fallback_decision(agents, fallback_agent, "rules", f"none of {len(rules)} rule(s) matched")


def route_by_skills(
    message: str, skills: Mapping[str, Sequence[str]], fallback_agent: str | None = None
) -> RoutingDecision:
    """Score each agent by the number of its skills the message names; the best wins.

    `skills` maps agent -> declared skills, in the supervisor's listing order, which breaks
    ties. Confidence is the winner's share of all matches: 1.0 when only it matched, 0.5 for
    a two-way tie. No match routes to the fallback (or first) agent with confidence 0.
    """
    agents = list(skills)
    matched = {agent: skills_matched(skills[agent], message) for agent in agents}
    scores = {agent: len(found) for agent, found in matched.items()}
    total = sum(scores.values())
    if total == 0:
        return fallback_decision(agents, fallback_agent, "skills", "no agent's skills matched")
    best = max(scores.values())
    target = next(a for a in agents if scores[a] == best)  # first listed wins a tie
    tied = [a for a in agents if scores[a] == best and a != target]
    named = ", ".join(repr(s) for s in matched[target])
    board = ", ".join(f"{a}={scores[a]}" for a in agents if scores[a])
    reasoning = f"{target} matched {best} skill(s): {named} (scores: {board})"
    if tied:
        reasoning += f"; tied with {', '.join(tied)}, listed earlier wins"
    return RoutingDecision(target=target, strategy="skills", reasoning=reasoning,
                           confidence=round(best / total, 4))


def route_round_robin(agents: Sequence[str], decisions_so_far: int) -> RoutingDecision:
    """Decision n (counting from 0 in the conversation) goes to agents[n mod len(agents)]."""
    if not agents:
        raise ValueError("a supervisor needs at least one agent to route to")
    index = decisions_so_far % len(agents)
    return RoutingDecision(
        target=agents[index], strategy="round-robin", confidence=1.0,
        reasoning=f"routing decision {decisions_so_far + 1} goes to agent {index + 1} of {len(agents)}")


def route_load_balanced(agents: Sequence[str], assignments: Mapping[str, int]) -> RoutingDecision:
    """The agent with the fewest assignments so far; ties go to the agent listed first."""
    if not agents:
        raise ValueError("a supervisor needs at least one agent to route to")
    counts = [(assignments.get(a, 0), i, a) for i, a in enumerate(agents)]
    _, _, target = min(counts)
    board = ", ".join(f"{a}={n}" for n, _, a in counts)
    return RoutingDecision(target=target, strategy="load-balanced", confidence=1.0,
                           reasoning=f"fewest assignments so far ({board})")


def route(
    team: TeamSpec, message: str, *, decisions_so_far: int, assignments: Mapping[str, int]
) -> RoutingDecision:
    """Decide with the supervisor's model-free strategy. There is no model argument: these
    strategies cannot call one. "llm" and "llm-decision" are a ValueError here."""
    sup = team.supervisor
    if sup is None:
        raise ValueError("routing strategies apply to a team with a supervisor")
    if sup.strategy == "rules":
        return route_by_rules(message, sup.rules, sup.agents, sup.fallback_agent)
    if sup.strategy == "skills":
        return route_by_skills(message, {a: team.agents[a].skills for a in sup.agents}, sup.fallback_agent)
    if sup.strategy == "round-robin":
        return route_round_robin(sup.agents, decisions_so_far)
    if sup.strategy == "load-balanced":
        return route_load_balanced(sup.agents, assignments)
    raise ValueError(f"strategy {sup.strategy!r} needs the model; it is not decided here")


def strategy_problems(team: TeamSpec) -> list[str]:
    """What is wrong with the supervisor's routing configuration (empty when nothing)."""
    sup = team.supervisor
    if sup is None:
        return []
    problems: list[str] = []
    agents = set(sup.agents)
    for number, rule in enumerate(sup.rules, start=1):
        if rule.target not in agents:
            problems.append(f"routing rule {number} targets {rule.target!r}, which is not one of "
                            f"the supervisor's agents ({', '.join(sup.agents)})")
        if not rule.keywords and not rule.pattern:
            problems.append(f"routing rule {number} has neither keywords nor a pattern")
        if any(not k.strip() for k in rule.keywords):
            problems.append(f"routing rule {number} has an empty keyword")
        try:
            rule_pattern(rule)
        except re.error as err:
            problems.append(f"routing rule {number} has an invalid regular expression "
                            f"{rule.pattern!r}: {err}")
    if sup.fallback_agent is not None and sup.fallback_agent not in agents:
        problems.append(f"fallback agent {sup.fallback_agent!r} is not one of the supervisor's "
                        f"agents ({', '.join(sup.agents)})")
    if sup.strategy != "llm" and not sup.agents:
        problems.append(f"strategy {sup.strategy!r} needs at least one agent to route to")
    if sup.strategy == "rules" and not sup.rules:
        problems.append('strategy "rules" needs at least one routing rule')
    if sup.strategy == "skills" and not any(
        team.agents[a].skills for a in sup.agents if a in team.agents
    ):
        problems.append('strategy "skills" needs at least one agent that declares skills')
    return problems


# ---- the transcript ------------------------------------------------------------------------


def latest_user_text(messages: Sequence[Message]) -> str:
    """The text of the last user message: what the strategies route on."""
    for m in reversed(messages):
        if m.role == "user" and m.kind != "routing":  # not the router's feedback to a model
            return m.content or ""
    return ""


def routing_record(decision: RoutingDecision, supervisor: str, agent_run: int = 0) -> Message:
    """The transcript message that records a decision, written by the supervisor."""
    return Message(
        role="assistant", name=supervisor, agent_run=agent_run, kind="routing",
        content=(f"Routing to {decision.target} ({decision.strategy}, confidence "
                 f"{decision.confidence:.2f}): {decision.reasoning}"),
    )


def supervisor_agents(team: TeamSpec) -> list[AgentSpec]:
    """The supervisor's agents as specs, in listing order (for `decision_instructions`)."""
    sup: SupervisorSpec | None = team.supervisor
    return [team.agents[a] for a in sup.agents] if sup else []
