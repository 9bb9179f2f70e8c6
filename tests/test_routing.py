"""Pure tests of the routing strategies (no Temporal, no model)."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.workflows import routing
from durable_teams.workflows.decision_format import (
    decision_instructions,
    decision_schema,
    parse_decision,
)
from durable_teams.workflows.definition_checks import TeamError, validate_team
from durable_teams.workflows.messages import (
    Message,
    RoutingDecision,
    RoutingRule,
    SupervisorSpec,
    TeamSpec,
)
from durable_teams.workflows.routing import (
    keyword_pattern,
    latest_user_text,
    route,
    route_by_rules,
    route_by_skills,
    route_load_balanced,
    route_round_robin,
    routing_record,
)

pytestmark = pytest.mark.pure

AGENTS = ["general", "billing", "tech"]
RULES = [
    RoutingRule(target="billing", keywords=["refund", "invoice"]),
    RoutingRule(target="tech", pattern=r"\berror\s+\d{3}\b"),
    RoutingRule(target="tech", keywords=["crash", "log in"]),
]
SKILLS = {
    "billing": ["refund", "invoice", "payment"],
    "tech": ["error", "crash", "login", "password reset"],
    "sales": ["pricing", "quote", "upgrade"],
}


# ---- keywords ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keyword", "text", "matches"),
    [
        ("refund", "I want a Refund!", True),
        ("refund", "REFUNDS please", True),  # plural in -s
        ("box", "two boxes", True),  # plural in -es
        ("bill", "a billing question", False),  # never inside a longer word
        ("bill", "prebill", False),
        ("reset password", "please RESET\n  password", True),  # any whitespace between words
        ("reset password", "reset my password", False),
        ("c++", "I write C++ code", True),  # punctuation at the edge
        ("c++", "I write c++11", False),
        ("log in", "I can't log in.", True),
    ],
)
def test_keywords_are_case_insensitive_whole_words(keyword: str, text: str, matches: bool) -> None:
    assert bool(keyword_pattern(keyword).search(text)) is matches


# ---- rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "target", "reasoning", "confidence"),
    [
        ("I need a refund", "billing", "rule 1 matched keyword 'refund'", 1.0),
        ("Where is my INVOICE?", "billing", "rule 1 matched keyword 'invoice'", 1.0),
        ("Got Error 503 on the dashboard", "tech",
         r"rule 2 matched pattern /\berror\s+\d{3}\b/ (matched 'Error 503')", 1.0),
        ("the app crashes on start", "tech", "rule 3 matched keyword 'crash'", 1.0),
        ("refund me, the app crashes", "billing", "rule 1 matched keyword 'refund'", 1.0),  # order
        ("the app crashed", "general",  # "crashed" is not the whole word "crash"
         "none of 3 rule(s) matched; routed to the fallback agent general", 0.0),
        ("hello there", "general", "none of 3 rule(s) matched; routed to the fallback agent general", 0.0),
    ],
)
def test_rules(message: str, target: str, reasoning: str, confidence: float) -> None:
    decision = route_by_rules(message, RULES, AGENTS, fallback_agent="general")
    assert decision == RoutingDecision(target=target, strategy="rules", reasoning=reasoning,
                                       confidence=confidence)


def test_rules_without_a_fallback_go_to_the_first_agent() -> None:
    decision = route_by_rules("hello", RULES, ["tech", "billing"])
    assert (decision.target, decision.confidence) == ("tech", 0.0)
    assert decision.reasoning == "none of 3 rule(s) matched; routed to the first agent, tech"


def test_rule_patterns_are_case_insensitive() -> None:
    rule = RoutingRule(target="tech", pattern=r"^how do i\b")
    assert route_by_rules("How do I export?", [rule], AGENTS).target == "tech"


# ---- skills --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "target", "confidence", "reasoning"),
    [
        ("refund my payment", "billing", 1.0,
         "billing matched 2 skill(s): 'refund', 'payment' (scores: billing=2)"),
        ("login error after the upgrade", "tech", 0.6667,
         "tech matched 2 skill(s): 'error', 'login' (scores: tech=2, sales=1)"),
        ("pricing for a refund", "billing", 0.5,  # a tie: billing is listed before sales
         "billing matched 1 skill(s): 'refund' (scores: billing=1, sales=1); "
         "tied with sales, listed earlier wins"),
        ("I need a Password  Reset", "tech", 1.0,
         "tech matched 1 skill(s): 'password reset' (scores: tech=1)"),
        ("what's the weather", "sales", 0.0,
         "no agent's skills matched; routed to the fallback agent sales"),
    ],
)
def test_skills(message: str, target: str, confidence: float, reasoning: str) -> None:
    decision = route_by_skills(message, SKILLS, fallback_agent="sales")
    assert decision == RoutingDecision(target=target, strategy="skills", confidence=confidence,
                                       reasoning=reasoning)


def test_skills_tie_order_follows_the_listing_and_no_match_goes_to_the_first_agent() -> None:
    reordered = {"sales": SKILLS["sales"], "billing": SKILLS["billing"]}
    assert route_by_skills("pricing for a refund", reordered).target == "sales"
    assert route_by_skills("nothing relevant", reordered).target == "sales"


def test_a_skill_declared_twice_counts_once() -> None:
    decision = route_by_skills("refund", {"a": ["refund", "Refund"], "b": ["refund"]})
    assert (decision.target, decision.confidence) == ("a", 0.5)


# ---- round-robin and load-balanced ---------------------------------------------------------


def test_round_robin_cycles_by_decisions_so_far() -> None:
    targets = [route_round_robin(["a", "b", "c"], n).target for n in range(7)]
    assert targets == ["a", "b", "c", "a", "b", "c", "a"]
    assert route_round_robin(["a", "b", "c"], 4).reasoning == "routing decision 5 goes to agent 2 of 3"


@pytest.mark.parametrize(
    ("assignments", "target"),
    [
        ({}, "a"),
        ({"a": 1}, "b"),
        ({"a": 1, "b": 1}, "c"),
        ({"a": 2, "b": 1, "c": 1}, "b"),  # tie between b and c: b is listed first
        ({"a": 0, "b": 0, "c": 0, "retired": -5}, "a"),  # agents not listed are ignored
        ({"a": 3, "b": 5, "c": 4}, "a"),
    ],
)
def test_load_balanced_picks_the_fewest_assignments(assignments: dict[str, int], target: str) -> None:
    decision = route_load_balanced(["a", "b", "c"], assignments)
    assert (decision.target, decision.strategy) == (target, "load-balanced")


def test_load_balanced_reasoning_shows_the_counts() -> None:
    assert route_load_balanced(["a", "b"], {"a": 2}).reasoning == "fewest assignments so far (a=2, b=0)"


# ---- dispatch from a team ------------------------------------------------------------------


def team(**options: object) -> TeamSpec:
    agents = [
        Agent("billing", skills=["refund", "invoice"]),
        Agent("tech", skills=["error", "crash"]),
        Agent("general"),
    ]
    return Supervisor(agents, **options).compile().spec  # type: ignore[arg-type]


def test_route_dispatches_on_the_supervisors_strategy() -> None:
    rules = [RoutingRule(target="tech", keywords=["crash"])]
    spec = team(strategy="rules", rules=rules, fallback_agent="general")
    assert route(spec, "it crashes", decisions_so_far=0, assignments={}).target == "tech"
    assert route(spec, "hi", decisions_so_far=0, assignments={}).target == "general"
    spec = team(strategy="skills")
    assert route(spec, "an invoice error and a crash", decisions_so_far=0, assignments={}).target == "tech"
    spec = team(strategy="round-robin")
    assert route(spec, "x", decisions_so_far=4, assignments={}).target == "tech"
    spec = team(strategy="load-balanced")
    assert route(spec, "x", decisions_so_far=0, assignments={"billing": 1, "tech": 1}).target == "general"
    for strategy in ("llm", "llm-decision"):
        with pytest.raises(ValueError, match="needs the model"):
            route(team(strategy=strategy), "x", decisions_so_far=0, assignments={})


def test_the_builder_carries_the_routing_options() -> None:
    billing = Agent("billing", skills=["refund"])
    sup = Supervisor([billing, Agent("tech")], strategy="rules", fallback_agent=billing,
                     rules=[RoutingRule(target="tech", pattern="error")],
                     decision_max_retries=4, decision_max_tool_rounds=1).compile().spec.supervisor
    assert sup is not None
    assert (sup.strategy, sup.fallback_agent, sup.decision_max_retries, sup.decision_max_tool_rounds) == (
        "rules", "billing", 4, 1)
    assert sup.rules == [RoutingRule(target="tech", pattern="error")]
    default = SupervisorSpec(agents=["a"])
    assert (default.strategy, default.rules, default.fallback_agent) == ("llm", [], None)
    assert (default.decision_max_retries, default.decision_max_tool_rounds) == (2, 3)


# ---- the transcript ------------------------------------------------------------------------


def test_transcript_helpers() -> None:
    decision = RoutingDecision(target="tech", strategy="rules", reasoning="rule 1 matched keyword 'crash'")
    record = routing_record(decision, "supervisor")
    assert record == Message(
        role="assistant", name="supervisor", kind="routing",
        content="Routing to tech (rules, confidence 1.00): rule 1 matched keyword 'crash'")
    log = [
        Message(role="user", content="first"),
        record,
        Message(role="assistant", name="tech", content="fixed"),
        Message(role="user", content="second"),
        record,
        Message(role="assistant", name="tech", content="again"),
    ]
    assert latest_user_text(log) == "second"
    assert latest_user_text([]) == ""


# ---- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"strategy": "rules", "rules": [RoutingRule(target="lawyer", keywords=["sue"])]},
         "routing rule 1 targets 'lawyer', which is not one of the supervisor's agents "
         "(billing, tech, general)"),
        ({"strategy": "rules", "rules": [RoutingRule(target="tech", pattern="(unclosed")]},
         "routing rule 1 has an invalid regular expression '(unclosed': missing ), unterminated "
         "subpattern at position 0"),
        ({"strategy": "rules", "rules": [RoutingRule(target="tech")]},
         "routing rule 1 has neither keywords nor a pattern"),
        ({"strategy": "rules", "rules": [RoutingRule(target="tech", keywords=[" "])]},
         "routing rule 1 has an empty keyword"),
        ({"strategy": "skills", "fallback_agent": "nobody"},
         "fallback agent 'nobody' is not one of the supervisor's agents (billing, tech, general)"),
        ({"strategy": "rules"}, 'strategy "rules" needs at least one routing rule'),
    ],
)
def test_bad_routing_configuration_is_a_team_error(options: dict, error: str) -> None:
    with pytest.raises(TeamError) as caught:
        team(**options)
    assert str(caught.value) == error


def test_skills_strategy_needs_agents_with_skills() -> None:
    with pytest.raises(TeamError, match='strategy "skills" needs at least one agent that declares skills'):
        Supervisor([Agent("a"), Agent("b")], strategy="skills").compile()


def test_validate_team_checks_a_spec_built_by_hand() -> None:
    spec = team()
    assert spec.supervisor is not None
    bad = replace(spec, **{"supervisor": replace(spec.supervisor, **{
        "strategy": "rules", "rules": [RoutingRule(target="tech", pattern="[a-")]})})
    with pytest.raises(TeamError, match="invalid regular expression"):
        validate_team(bad)
    validate_team(spec)  # the default ("llm", no rules) is fine


def test_negative_decision_limits_are_refused() -> None:
    with pytest.raises(ValidationError):
        SupervisorSpec(agents=["a"], decision_max_retries=-1)
    with pytest.raises(ValidationError):
        SupervisorSpec(agents=["a"], decision_max_tool_rounds=-1)


# ---- llm-decision: parsing the model's answer ----------------------------------------------

NAMES = ["research_expert", "math_expert"]
FEEDBACK = ". Reply with JSON {target, reasoning, confidence}; target must be one of: research_expert, math_expert"


@pytest.mark.parametrize(
    ("text", "target", "reasoning", "confidence"),
    [
        ('{"target": "math_expert", "reasoning": "sums", "confidence": 0.9}', "math_expert", "sums", 0.9),
        ('```json\n{"target": "research_expert", "reasoning": "facts", "confidence": 1}\n```',
         "research_expert", "facts", 1.0),
        ('```\n{"target": "math_expert", "reasoning": "", "confidence": 0}\n```', "math_expert", "", 0.0),
        ('Here is my decision:\n```JSON\n{"target": "math_expert", "reasoning": "r", "confidence": 0.5}```',
         "math_expert", "r", 0.5),
        ('I pick {"target": "math_expert", "reasoning": "r", "confidence": "0.7"} because.',
         "math_expert", "r", 0.7),
        ('{"target": "Math Expert", "reasoning": "r", "confidence": 0.6}', "math_expert", "r", 0.6),
        ('{"target": "transfer_to_research_expert", "reasoning": "r"}', "research_expert", "r", 0.8),
        ('{"targetAgent": "math_expert", "reasoning": "af style", "confidence": 0.3, "extra": 1}',
         "math_expert", "af style", 0.3),
    ],
)
def test_parse_decision_accepts(text: str, target: str, reasoning: str, confidence: float) -> None:
    assert parse_decision(text, NAMES) == RoutingDecision(
        target=target, strategy="llm-decision", reasoning=reasoning, confidence=confidence)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"target": "lawyer", "reasoning": "r", "confidence": 0.9}', "'lawyer' is not an agent of this team"),
        ("I think math_expert should do it.", "Your reply was not JSON"),
        ("", "Your reply was empty"),
        (None, "Your reply was empty"),
        ('["math_expert"]', "Your reply was JSON but not an object (list)"),
        ('{"target": "math_expert", "confidence": 1.5}',
         "Your decision is invalid (confidence: Input should be less than or equal to 1)"),
        ('{"reasoning": "no target"}', "Your decision is invalid (target: Field required)"),
        ('```json\n{"target": "math_expert",\n```', "Your reply was not JSON"),
    ],
)
def test_parse_decision_explains_what_to_fix(text: str | None, why: str) -> None:
    assert parse_decision(text, NAMES) == why + FEEDBACK


def test_decision_prompt_and_schema_name_the_agents() -> None:
    schema = decision_schema(NAMES)
    assert schema["properties"]["target"]["enum"] == NAMES
    assert schema["required"] == ["target", "reasoning", "confidence"]
    spec = team()
    text = decision_instructions(routing.supervisor_agents(spec))
    assert "- billing: refund, invoice" in text and "- general: no description" in text
    assert '{"target": "<agent name>"' in text


# ---- the model-free strategies cannot call a model -----------------------------------------

MODEL_FREE_FUNCTIONS = [route, route_by_rules, route_by_skills, route_round_robin, route_load_balanced]


@pytest.mark.parametrize("fn", MODEL_FREE_FUNCTIONS, ids=lambda f: f.__name__)
def test_model_free_strategies_take_no_model(fn) -> None:  # noqa: ANN001
    params = inspect.signature(fn).parameters
    for name, param in params.items():
        assert not {"model", "backend", "client"} & set(name.split("_")), name
        assert "Model" not in str(param.annotation) and "Backend" not in str(param.annotation), name


@pytest.mark.slow  # starts a process
def test_the_routing_module_imports_nothing_that_could_reach_a_model() -> None:
    tree = ast.parse(Path(routing.__file__).read_text())
    imported = {"." * n.level + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "re", "collections.abc", ".messages"}
    # and importing it (with everything it imports) loads no model, activity or Temporal code
    probe = ("import sys, durable_teams.workflows.routing; print(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('openai', 'temporalio', 'httpx') "
             "or m.startswith('durable_teams.activities')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_model_free_strategies_decide_a_table_of_messages_on_their_own() -> None:
    """Every model-free strategy answers every message (the empty one too) with one of the
    team's agents, and the same inputs give the same decision: a pure function, so there is
    nothing it could ask a model (the import test above shows it cannot reach one)."""
    messages = ["I need a refund", "it crashes", "error 500", "hello", ""]
    rules = [RoutingRule(target="billing", keywords=["refund"])]
    for strategy in routing.MODEL_FREE:
        spec = team(strategy=strategy, rules=rules)
        for n, text in enumerate(messages):
            decided = route(spec, text, decisions_so_far=n, assignments={"billing": n})
            assert decided.strategy == strategy
            assert decided.target in spec.agents, (strategy, text, decided.target)
            assert route(spec, text, decisions_so_far=n, assignments={"billing": n}) == decided
    rules_team = team(strategy="rules", rules=rules)
    assert route(rules_team, "I need a refund", decisions_so_far=0, assignments={}).target == "billing"
