"""The FAANG question answered by a team of teams (langgraph-supervisor's multi-level
hierarchy): a top supervisor over a research team and a math team, each a supervisor with its
own expert. Each nested team runs as a child workflow of the conversation.

`SCRIPT` replays the same expert steps as `faang.SCRIPT`; the team leads pass the work on.
"""

from __future__ import annotations

from durable_teams.examples import faang
from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.worker.scripted import call, say

QUESTION = faang.QUESTION
ANSWER = faang.ANSWER
RESEARCH_SUMMARY = faang.SCRIPT["research_expert"][1].content or ""


def build(model: str | None = None) -> Supervisor:
    research = Agent(
        name="research_expert",
        instructions="You are a world class researcher with access to web search. Do not do any math.",
        tools=[faang.web_search],
        model=model,
        description="Finds current facts on the web.",
    )
    math = Agent(
        name="math_expert",
        instructions="You are a math expert. Always use one tool at a time.",
        tools=[faang.add, faang.multiply],
        model=model,
        description="Does arithmetic with add and multiply.",
    )
    research_team = Supervisor(
        [research], supervisor_name="research_team", model=model, name="research_team",
        description="A team that researches facts.",
        instructions="You lead a research team. Send research questions to research_expert.",
    )
    math_team = Supervisor(
        [math], supervisor_name="math_team", model=model, name="math_team",
        description="A team that does calculations.",
        instructions="You lead a math team. Send calculations to math_expert.",
    )
    return Supervisor(
        [research_team, math_team],
        supervisor_name="top_supervisor",
        model=model,
        name="faang-teams",
        instructions=(
            "You manage a research team and a math team. For facts, use research_team. "
            "For calculations, use math_team."
        ),
    )


SCRIPT = {
    "top_supervisor": [
        call("transfer_to_research_team"),
        call("transfer_to_math_team"),
        say(ANSWER),
    ],
    "research_team": [call("transfer_to_research_expert"), say(RESEARCH_SUMMARY)],
    "math_team": [call("transfer_to_math_expert"), say(ANSWER)],
    "research_expert": faang.SCRIPT["research_expert"],
    "math_expert": faang.SCRIPT["math_expert"],
}
