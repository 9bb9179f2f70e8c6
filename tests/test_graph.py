"""`durable-teams graph`: the Mermaid diagrams of the example teams, exactly (pure, no server)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from durable_teams.examples import acme, faang, faang_teams, support
from durable_teams.teams.builders import Agent, Supervisor, tool
from durable_teams.teams.graph import team_graph
from durable_teams.workflows.messages import RoutingRule

pytestmark = pytest.mark.pure

FAANG = """\
flowchart TD
    user(["user"])
    supervisor{{"supervisor<br/>(supervisor, routing: llm)"}}
    research_expert["research_expert"]
    research_expert --- research_expert_web_search(["web_search"])
    math_expert["math_expert"]
    math_expert --- math_expert_add(["add"])
    math_expert --- math_expert_multiply(["multiply"])
    supervisor -->|"transfer_to_research_expert"| research_expert
    research_expert -.-> supervisor
    supervisor -->|"transfer_to_math_expert"| math_expert
    math_expert -.-> supervisor
    user --> supervisor
"""

SUPPORT = """\
flowchart TD
    user(["user"])
    triage_agent{{"triage_agent<br/>(supervisor, routing: llm)"}}
    triage_agent --- triage_agent_ask_human(["ask_human<br/>(built-in)"])
    sales_agent["sales_agent"]
    sales_agent --- sales_agent_execute_order(["execute_order<br/>(needs approval)"])
    issues_and_repairs["issues_and_repairs"]
    issues_and_repairs --- issues_and_repairs_execute_refund(["execute_refund<br/>(needs approval)"])
    issues_and_repairs --- issues_and_repairs_look_up_item(["look_up_item"])
    triage_agent -->|"transfer_to_sales_agent"| sales_agent
    sales_agent -.-> triage_agent
    triage_agent -->|"transfer_to_issues_and_repairs"| issues_and_repairs
    issues_and_repairs -.-> triage_agent
    user --> triage_agent
"""

ACME = """\
flowchart TD
    user(["user"])
    triage["triage"]
    triage --- triage_escalate_to_human(["escalate_to_human<br/>(return direct)"])
    sales["sales"]
    sales --- sales_execute_order(["execute_order<br/>(needs approval)"])
    repairs["repairs"]
    repairs --- repairs_execute_refund(["execute_refund<br/>(needs approval)"])
    repairs --- repairs_look_up_item(["look_up_item"])
    triage -->|"transfer_to_sales_agent"| sales
    triage -->|"transfer_to_issues_and_repairs"| repairs
    sales -->|"transfer_back_to_triage"| triage
    repairs -->|"transfer_back_to_triage"| triage
    user --> triage
"""

FAANG_TEAMS = """\
flowchart TD
    user(["user"])
    top_supervisor{{"top_supervisor<br/>(supervisor, routing: llm)"}}
    subgraph team_research_team["research_team (nested team, child workflow)"]
        research_team{{"research_team<br/>(supervisor, routing: llm)"}}
        research_expert["research_expert"]
        research_expert --- research_expert_web_search(["web_search"])
        research_team -->|"transfer_to_research_expert"| research_expert
        research_expert -.-> research_team
    end
    subgraph team_math_team["math_team (nested team, child workflow)"]
        math_team{{"math_team<br/>(supervisor, routing: llm)"}}
        math_expert["math_expert"]
        math_expert --- math_expert_add(["add"])
        math_expert --- math_expert_multiply(["multiply"])
        math_team -->|"transfer_to_math_expert"| math_expert
        math_expert -.-> math_team
    end
    top_supervisor -->|"transfer_to_research_team"| research_team
    research_team -.-> top_supervisor
    top_supervisor -->|"transfer_to_math_team"| math_team
    math_team -.-> top_supervisor
    user --> top_supervisor
"""

def test_faang_team_is_drawn_exactly():
    assert team_graph(faang.build().compile().spec) == FAANG


def test_support_team_shows_ask_human_and_approvals():
    assert team_graph(support.build().compile().spec) == SUPPORT


def test_swarm_is_drawn_with_its_start_agent_and_named_handoffs():
    assert team_graph(acme.build().compile().spec) == ACME


def test_nested_teams_are_subgraphs_entered_through_their_supervisor():
    assert team_graph(faang_teams.build().compile().spec) == FAANG_TEAMS


def _lookup(order: str) -> str:
    """Look up an order."""
    return order


def test_rules_strategy_odd_names_and_tool_options():
    lookup = tool(_lookup, name="lookup", return_direct=True)
    team = Supervisor(
        [Agent("end", tools=[lookup]), Agent("order-desk", run_as_child=True)],
        supervisor_name="router", strategy="rules", name="rules",
        rules=[RoutingRule(target="order-desk", keywords=["order", "refund"], pattern=r"#\d+")],
        fallback_agent="end",
    ).compile()
    assert team_graph(team.spec) == RULES


RULES = """\
flowchart TD
    user(["user"])
    router{{"router<br/>(supervisor, routing: rules)"}}
    n_end["end"]
    n_end --- n_end_lookup(["lookup<br/>(return direct)"])
    order_desk["order-desk<br/>(child workflow)"]
    router -->|"rules; fallback"| n_end
    n_end -.-> router
    router -->|"rules; order, refund, /#\\d+/"| order_desk
    order_desk -.-> router
    user --> router
"""


@pytest.mark.slow  # starts a process
def test_cli_prints_the_graph_and_refuses_unknown_teams():
    ok = subprocess.run([sys.executable, "-m", "durable_teams", "graph", "faang"],
                        capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout) == (0, FAANG)
    bad = subprocess.run([sys.executable, "-m", "durable_teams", "graph", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr.strip() == ("durable-teams: no team named 'nope' "
                                  "(known: acme, faang, faang-teams, support)")


def test_intents_are_drawn_on_the_team_and_on_the_agents_that_declare_them():
    from durable_teams.teams.builders import Swarm
    from durable_teams.workflows.intents import Intent

    billing = Agent("billing", "x", intents=[Intent(phrases=["thanks"], answer="ok")])
    team = Supervisor([billing], name="shop", intents=[
        Intent(phrases=["opening hours", "when are you open"], answer="9-5"), Intent(phrases=["refund"], agent="billing")])
    drawn = team_graph(team.compile().spec)
    assert '    billing --- billing_intents[/"intents:<br/>thanks -#gt; answer"/]\n' in drawn
    assert ('    supervisor --- supervisor_intents[/"intents:<br/>opening hours | when are you open -#gt; answer'
            '<br/>refund -#gt; agent billing"/]\n') in drawn
    swarm = Swarm([Agent("desk", "x"), billing], name="frontdesk", intents=[Intent(phrases=["hi"], answer="hello")])
    assert 'desk --- desk_intents[/"intents:<br/>hi -#gt; answer"/]' in team_graph(swarm.compile().spec)
    assert "intents" not in team_graph(faang.build().compile().spec)
