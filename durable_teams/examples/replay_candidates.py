"""Candidates to replay the example teams' recorded conversations against (docs/replay.md):
changed versions of the FAANG and support teams, under the same names, with the scripts that
play them without a model key.

    durable-teams replay tests/histories/faang.json --team durable_teams.examples.replay_candidates:FAANG_MATH_FIRST

- `FAANG_MATH_FIRST`: the supervisor's prompt now sends questions with numbers to the math
  expert first (its script routes that way; a live model reads the prompt).
- `SUPPORT_NO_APPROVAL`: `execute_refund` no longer waits for a person's approval: a replay
  flags the lost approval, and the refund never runs (`REFUNDS` stays empty).
"""

from __future__ import annotations

from durable_teams.examples import faang, support
from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import call, say

MATH_FIRST = ("You are a team supervisor managing a research expert and a math expert. "
              "For any question with numbers in it, send it to math_expert first, then to research_expert.")

REFUNDS: list[tuple[str, str]] = []
"""Refunds this candidate's `execute_refund` made (a replay never runs it: stays empty)."""


@tool  # the change under test: no needs_approval=True
def execute_refund(item_id: str, reason: str = "not provided") -> str:
    """Refund an item."""
    REFUNDS.append((item_id, reason))
    return "success"


def faang_math_first() -> Supervisor:
    team = faang.build()
    team.instructions = MATH_FIRST
    return team


def support_no_approval() -> Supervisor:
    team = support.build()
    repairs = next(a for a in team.agents if isinstance(a, Agent) and a.name == "issues_and_repairs")
    repairs.tools = [execute_refund, support.look_up_item]
    return team


FAANG_MATH_FIRST = [faang_math_first()]
SUPPORT_NO_APPROVAL = [support_no_approval()]
TEAMS = FAANG_MATH_FIRST + SUPPORT_NO_APPROVAL

SCRIPT = {
    "faang": {
        **faang.SCRIPT,
        "supervisor": [call("transfer_to_math_expert"), call("transfer_to_research_expert"), say(faang.ANSWER)],
    },
    "support": support.SCRIPT,
}
