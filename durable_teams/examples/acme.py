"""ACME customer service as the Swarm cookbook writes it: no supervisor, three peers handing
the conversation to each other. Triage routes; sales and issues-and-repairs hand back with
`transfer_back_to_triage`, described as the cookbook describes it; triage can escalate to a
person with the cookbook's `escalate_to_human`. The agent that answered stays active for the
customer's next turn.

The tools are the support example's (a person approves every order and refund).
"""

from __future__ import annotations

from durable_teams.examples.support import execute_order, execute_refund, look_up_item
from durable_teams.teams.builders import Agent, Swarm, handoff
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import call, say

ESCALATIONS: list[str] = []

BACK_TO_TRIAGE = ("Call this if the user brings up a topic outside of your purview, including "
                  "escalating to human.")
"""The cookbook's docstring of `transfer_back_to_triage`: when to call it, a cue models use."""


@tool(return_direct=True)
def escalate_to_human(summary: str) -> str:
    """Only call this if explicitly asked to."""
    ESCALATIONS.append(summary)
    return f"Escalating to a human agent. Summary: {summary}"


def build(model: str | None = None) -> Swarm:
    triage = Agent(
        name="triage",
        model=model,
        description="Routes the customer to the right department.",
        instructions=(
            "You are a customer service bot for ACME Inc. Introduce yourself. Always be very "
            "brief. Gather information to direct the customer to the right department. But "
            "make your questions subtle and natural."
        ),
        tools=[escalate_to_human],
    )
    sales = Agent(
        name="sales",
        model=model,
        description="Anything sales or buying related.",
        instructions=(
            "You are a sales agent for ACME Inc. Always answer in a sentence or less. Follow "
            "this routine with the user: 1. Ask them about any problems in their life related "
            "to catching roadrunners. 2. Casually mention one of ACME's crazy made-up products "
            "can help. Don't mention price. 3. Once the user is bought in, drop a ridiculous "
            "price. 4. Only after everything, and if the user says yes, tell them a crazy "
            "caveat and execute their order."
        ),
        tools=[execute_order],
        handoffs=[handoff("triage", "transfer_back_to_triage", description=BACK_TO_TRIAGE)],
    )
    repairs = Agent(
        name="repairs",
        model=model,
        description="Issues, repairs, or refunds.",
        instructions=(
            "You are a customer support agent for ACME Inc. Always answer in a sentence or "
            "less. Follow this routine with the user: 1. First, ask probing questions and "
            "understand the user's problem deeper, unless the user has already provided a "
            "reason. 2. Propose a fix (make one up). 3. ONLY if not satisfied, offer a refund. "
            "4. If accepted, search for the ID and then execute refund."
        ),
        tools=[execute_refund, look_up_item],
        handoffs=[handoff("triage", "transfer_back_to_triage", description=BACK_TO_TRIAGE)],
    )
    triage.handoffs = [
        handoff(sales, "transfer_to_sales_agent"),
        handoff(repairs, "transfer_to_issues_and_repairs"),
    ]
    return Swarm([triage, sales, repairs], start_agent="triage", name="acme")


SCRIPT = {
    "triage": [
        call("transfer_to_sales_agent"),
        call("transfer_to_issues_and_repairs"),
    ],
    "sales": [
        say("Roadrunner troubles? The ACME Turbo Trap never misses."),
        say("Just $9,999,999. It only works on Tuesdays."),
        call("transfer_back_to_triage"),
    ],
    "repairs": [
        call("look_up_item", search_query="boots that fell apart"),
        call("execute_refund", item_id="item_132612938", reason="fell apart after a week"),
        say("Done: your boots are refunded."),
    ],
}
"""A conversation in three turns: buy, ask the price, then want a refund instead."""
