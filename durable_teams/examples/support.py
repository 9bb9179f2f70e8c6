"""ACME customer support, after the Swarm cookbook: a triage supervisor that asks the customer
a question before it routes, a sales agent and an issues-and-repairs agent whose order and
refund tools need a person's approval before they run.
"""

from __future__ import annotations

from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptStep, call, say, when

QUESTION = "My boots fell apart after a week. I want my money back."

REFUNDS: list[tuple[str, str]] = []
ORDERS: list[tuple[str, int]] = []


def look_up_item(search_query: str) -> str:
    """Use to find item ID. Search query can be a description or keywords."""
    return "item_132612938"


@tool(needs_approval=True)
def execute_refund(item_id: str, reason: str = "not provided") -> str:
    """Refund an item. A person approves every refund before it runs."""
    REFUNDS.append((item_id, reason))
    return "success"


@tool(needs_approval=True)
def execute_order(product: str, price: int) -> str:
    """Place an order. Price should be in USD. A person confirms every order before it runs."""
    ORDERS.append((product, price))
    return "Success"


def build(model: str | None = None, timeout_seconds: float = 86_400.0) -> Supervisor:
    sales = Agent(
        name="sales_agent",
        model=model,
        description="Anything sales or buying related.",
        instructions=(
            "You are a sales agent for ACME Inc. Always answer in a sentence or less. "
            "Only if the user says yes, tell them a crazy caveat and execute their order."
        ),
        tools=[execute_order],
    )
    repairs = Agent(
        name="issues_and_repairs",
        model=model,
        description="Issues, repairs, or refunds.",
        instructions=(
            "You are a customer support agent for ACME Inc. Always answer in a sentence or less. "
            "If the user wants a refund, search for the item ID and then execute the refund."
        ),
        tools=[execute_refund, look_up_item],
    )
    return Supervisor(
        [sales, repairs],
        supervisor_name="triage_agent",
        name="support",
        model=model,
        tools=["ask_human"],
        ask_human_timeout_seconds=timeout_seconds,
        instructions=(
            "You are a customer service bot for ACME Inc. Always be very brief. Before you route "
            "a refund, ask the customer for their order number with ask_human. Then direct the "
            "customer to the right department."
        ),
    )


NOT_RUN = "not run"
"""What the workflow tells the model of a call a person denied or never approved
(workflows/human.py: "... It was not run.", "Not run: ...")."""
NOT_REFUNDED = "I could not refund your boots"
ANSWER = "Your refund is on its way. Anything else I can help with?"
DENIED_ANSWER = "Sorry, your refund was not approved, so nothing was refunded. Anything else I can help with?"

# Each last step follows what happened: a denied refund is never reported as done.
SCRIPT: dict[str, list[ScriptStep]] = {
    "triage_agent": [
        call("ask_human", question="Sorry to hear that! What's your order number?",
             suggestions=["I don't have it"]),
        call("transfer_to_issues_and_repairs"),
        when(NOT_REFUNDED,
             then=say(DENIED_ANSWER),
             otherwise=say(ANSWER)),
    ],
    "issues_and_repairs": [
        call("look_up_item", search_query="boots"),
        call("execute_refund", item_id="item_132612938", reason="fell apart after a week"),
        when(NOT_RUN,
             then=say(f"{NOT_REFUNDED}: the refund was not approved."),
             otherwise=say("Done: your boots are refunded.")),
    ],
}
