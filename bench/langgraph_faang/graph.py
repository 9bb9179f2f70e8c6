"""langgraph-supervisor's FAANG example, as its walkthrough writes it, for `langgraph dev`:
the other side of bench/langgraph_side_by_side.py. The model is the scripted FAANG endpoint
(bench/faang_model.py) at $OPENAI_BASE_URL, the same one durable-teams' worker calls."""

from __future__ import annotations

import os

from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor

model = ChatOpenAI(model="faang-script", base_url=os.environ["OPENAI_BASE_URL"], api_key="unused")


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


math_agent = create_react_agent(
    model=model, tools=[add, multiply], name="math_expert",
    prompt="You are a math expert. Always use one tool at a time.")
research_agent = create_react_agent(
    model=model, tools=[web_search], name="research_expert",
    prompt="You are a world class researcher with access to web search. Do not do any math.")

graph = create_supervisor(
    [research_agent, math_agent], model=model,
    prompt=("You are a team supervisor managing a research expert and a math expert. "
            "For current events, use research_agent. For math problems, use math_agent."),
).compile(name="faang")
