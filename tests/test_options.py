"""Each option is declared and documented once (workflows/options.py); the builders users
write and the specs the workflow reads both inherit it, and `compile()` copies it by name."""

from __future__ import annotations

import ast
import inspect
from dataclasses import fields

import pytest

from durable_teams import Agent, Budgets, Supervisor, Swarm
from durable_teams.teams import ModelCalls, RoutingRule
from durable_teams.workflows import options
from durable_teams.workflows.intents import Intent, IntentSimilarity
from durable_teams.workflows.messages import AgentSpec, SupervisorSpec
from durable_teams.workflows.options import (
    AgentOptions,
    SupervisorOptions,
    TeamOptions,
    option_values,
)

pytestmark = pytest.mark.pure

SUPERVISOR = dict(
    output_mode="full_history", add_handoff_messages=False, workers_see_handoffs="all",
    handoff_tool_prefix="ask_", parallel_tool_calls=True, max_parallel_handoffs=3,
    worker_preamble=True, strategy="rules", rules=[RoutingRule(target="a", keywords=["x"])],
    decision_max_retries=5, decision_max_tool_rounds=1,
)
AGENT = dict(description="Does a.", skills=["x"], run_as_child=True, temperature=0.2,
             model_calls=ModelCalls(timeout_seconds=5.0), intents=[Intent(phrases=["hi a"], answer="a")],
             api="responses", interrupt_before=["agent"], interrupt_after=["tools"])
TEAM = dict(budgets=Budgets(max_model_calls=3), ask_human_timeout_seconds=60.0, ask_human_default="no",
            model_calls=ModelCalls(max_attempts=2), continue_as_new_after_events=500,
            continue_as_new_after_bytes=1_000_000, intents=[Intent(phrases=["hi"], answer="hello")],
            intent_similarity=IntentSimilarity(threshold=0.9), api="chat_completions",
            interrupt_before=["tools"], interrupt_after=["a"])


def test_samples_cover_every_option() -> None:
    assert set(SUPERVISOR) == {f.name for f in fields(SupervisorOptions)}
    assert set(AGENT) == {f.name for f in fields(AgentOptions)}
    assert set(TEAM) == {f.name for f in fields(TeamOptions)}


def test_every_option_set_on_a_builder_reaches_the_spec() -> None:
    agent = Agent("a", "Answer.", **AGENT)  # type: ignore[arg-type]
    team = Supervisor([agent], **SUPERVISOR, **TEAM).compile().spec  # type: ignore[arg-type]
    assert team.supervisor is not None
    assert option_values(team.supervisor, SupervisorOptions) == SUPERVISOR
    assert option_values(team.agents["a"], AgentOptions) == AGENT
    assert {k: getattr(team, k) for k in TEAM} == TEAM
    swarm = Swarm([Agent("a")], **TEAM).compile().spec  # type: ignore[arg-type]
    assert {k: getattr(swarm, k) for k in TEAM} == TEAM


def test_builders_and_specs_share_the_option_classes() -> None:
    assert issubclass(Supervisor, SupervisorOptions) and issubclass(SupervisorSpec, SupervisorOptions)
    assert issubclass(Agent, AgentOptions) and issubclass(AgentSpec, AgentOptions)
    assert issubclass(Supervisor, TeamOptions) and issubclass(Swarm, TeamOptions)
    # The first arguments stay positional, the options keyword-only.
    assert Agent("a", "Answer.").instructions == "Answer."
    assert Supervisor([Agent("a")], "Route.").instructions == "Route."


def test_every_option_is_documented_where_it_is_declared() -> None:
    tree = ast.parse(inspect.getsource(options))
    undocumented = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Options")):
        body = cls.body
        for i, node in enumerate(body):
            if isinstance(node, ast.AnnAssign):
                after = body[i + 1] if i + 1 < len(body) else None
                documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                if not documented:
                    undocumented.append(f"{cls.name}.{ast.unparse(node.target)}")
    assert undocumented == []


def test_team_options_are_declared_once_and_reach_the_spec() -> None:
    """Every team option a builder takes is a TeamSpec field with the same default, and what a
    builder is given is what the spec holds (the continue-as-new limits included)."""
    from dataclasses import MISSING, fields

    from durable_teams.teams.builders import Agent, Swarm
    from durable_teams.workflows.messages import TeamSpec
    from durable_teams.workflows.options import TeamOptions

    assert issubclass(TeamSpec, TeamOptions)  # declared once: the spec inherits the options
    spec = TeamSpec(agents={})
    for option in fields(TeamOptions):
        default = option.default_factory() if option.default is MISSING else option.default  # type: ignore[misc]
        assert getattr(spec, option.name) == default, option.name
    team = Swarm([Agent("a", "Answers.")], continue_as_new_after_events=500,
                 continue_as_new_after_bytes=1_000_000, intents=[Intent(phrases=["hi"], answer="hello")],
            intent_similarity=IntentSimilarity(threshold=0.9), api="chat_completions").compile()
    assert (team.spec.continue_as_new_after_events, team.spec.continue_as_new_after_bytes) == (500, 1_000_000)


def test_a_builder_has_one_name_the_teams() -> None:
    """`name` is what a worker serves and what a supervisor above hands off to; the supervisor
    agent is `supervisor_name` ("supervisor", or the team's name when nested)."""
    inner = Supervisor([Agent("a")], name="research", description="Finds facts.")
    top = Supervisor([inner, Agent("b")], name="company").compile().spec
    assert (top.name, top.supervisor.name if top.supervisor else None) == ("company", "supervisor")
    nested = top.agents["research"].team
    assert nested is not None and nested.supervisor is not None
    assert (nested.name, nested.supervisor.name) == ("research", "research")
    precompiled = Supervisor([Supervisor([Agent("a")], name="research").compile(), Agent("b")]).compile().spec
    assert precompiled.agents["research"].team.supervisor.name == "research"  # type: ignore[union-attr]
    named = Supervisor([Agent("a")], name="company", supervisor_name="boss").compile().spec
    assert (named.name, named.supervisor.name if named.supervisor else None) == ("company", "boss")
    assert Swarm([Agent("a")], name="desk").compile().spec.name == "desk"
