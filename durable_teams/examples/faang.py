"""The langgraph-supervisor walkthrough's example: a supervisor over a research expert and a
math expert, answering "what's the combined headcount of the FAANG companies in 2024?".

`SCRIPT` replays the model responses logged in the walkthrough, so the demo runs without a
model (and says so); the tools are real and run as real activities either way. Workers see
every earlier handoff, as langgraph-supervisor shows them (`workers_see_handoffs="all"`), so
each model request matches the walkthrough's log message for message (tests/test_faang.py).
"""

from __future__ import annotations

from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.worker.scripted import call, say

QUESTION = "what's the combined headcount of the FAANG companies in 2024?"


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def web_search(query: str) -> str:
    """Search the web for information."""
    return (
        "Here are the headcounts for each of the FAANG companies in 2024:\n"
        "1. **Facebook (Meta)**: 67,317 employees.\n"
        "2. **Apple**: 164,000 employees.\n"
        "3. **Amazon**: 1,551,000 employees.\n"
        "4. **Netflix**: 14,000 employees.\n"
        "5. **Google (Alphabet)**: 181,269 employees."
    )


def build(model: str | None = None) -> Supervisor:
    math_agent = Agent(
        name="math_expert",
        instructions="You are a math expert. Always use one tool at a time.",
        tools=[add, multiply],
        model=model,
        description="Does arithmetic with add and multiply.",
    )
    research_agent = Agent(
        name="research_expert",
        instructions="You are a world class researcher with access to web search. Do not do any math.",
        tools=[web_search],
        model=model,
        description="Finds current facts on the web.",
    )
    return Supervisor(
        [research_agent, math_agent],
        model=model,
        name="faang",
        workers_see_handoffs="all",
        instructions=(
            "You are a team supervisor managing a research expert and a math expert. "
            "For current events, use research_agent. "
            "For math problems, use math_agent."
        ),
    )


ANSWER = "The combined headcount of the FAANG companies in 2024 is 1,977,586."

SCRIPT = {
    "supervisor": [
        call("transfer_to_research_expert"),
        call("transfer_to_math_expert"),
        say(ANSWER),
    ],
    "research_expert": [
        call("web_search", query="Combined headcount of FAANG companies in 2024"),
        say(
            "The individual headcounts of FAANG companies in 2024 are as follows: Meta has "
            "67,317 employees, Apple has 164,000 employees, Amazon has 1,551,000 employees, "
            "Netflix has 14,000 employees, and Alphabet has 181,269 employees. You can sum these "
            "figures to get the combined headcount."
        ),
    ],
    "math_expert": [
        call("add", a=67317, b=164000),
        call("add", a=231317, b=1551000),
        call("add", a=1782317, b=14000),
        call("add", a=1796317, b=181269),
        say(ANSWER),
    ],
}
