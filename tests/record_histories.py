"""Record the workflow histories that test_replay.py replays:

    python -m tests.record_histories faang_teams      # one history, by name
    python -m tests.record_histories                  # all of them

One-shot examples (`EXAMPLES`) answer one task. Conversations (`CONVERSATIONS`) are driven turn
by turn: updates, a person's answers, routing decisions and a continue-as-new are in their
histories, so replaying them pins that logic too.

Re-record only on purpose: a committed history is the proof that conversations started with
older code still replay under the new code.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.client import send_turn
from durable_teams.examples import acme, faang, faang_teams
from durable_teams.scripted import ScriptedModel, Step, call, say
from durable_teams.team import Agent, Supervisor
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import binary, pending_question, running_worker

HERE = Path(__file__).parent / "histories"
EXAMPLES: dict[str, ModuleType] = {"faang": faang, "faang_teams": faang_teams}
"""History name -> example module (`build()`, `SCRIPT`, `QUESTION`). `faang_teams` is the
parent of a two-level team: its history holds the child workflow commands."""


async def acme_conversation(client: Client, name: str) -> None:
    """The Swarm seed's three turns (an approved refund in the third), then a continue-as-new:
    the recorded run ends with it."""
    compiled = acme.build().compile()
    compiled.spec.continue_as_new_after_events = 60  # passed during the third turn
    async with running_worker(client, "record", [compiled], ScriptedModel(acme.SCRIPT)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False,
                                                set_search_attributes=False),
            id=name, task_queue="record")
        await send_turn(client, name, "I keep failing to catch a roadrunner. Want to buy something.")
        await send_turn(client, name, "How much is it?")
        third = asyncio.ensure_future(send_turn(client, name, "My boots fell apart, refund them."))
        question = await pending_question(handle)
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, approved=True))
        await third
        await client.get_workflow_handle(name).signal(TeamWorkflow.close)
        await client.get_workflow_handle(name).result()


def decider(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    """The supervisor asks for the order number, names a wrong agent, then decides; workers echo."""
    if req.agent != "router":
        return say(f"{req.agent} on: {next(m['content'] for m in reversed(messages) if m['role'] == 'user')}")
    steps = [call("ask_human", question="What is your order number?"),
             say('{"target": "billing"}'),
             say('{"target": "orders", "reasoning": "an order", "confidence": 0.9}')]
    return steps[min(req.agent_call_index, len(steps) - 1)]


async def routing_conversation(client: Client, name: str) -> None:
    """An llm-decision turn (a question, a bad target, a decision), then an @mention turn."""
    compiled = Supervisor([Agent("orders", "Orders."), Agent("maths", "Sums.")], name="router",
                          strategy="llm-decision", tools=["ask_human"], team_name="routing").compile()
    async with running_worker(client, "record", [compiled], ScriptedModel(decider)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False,
                                                set_search_attributes=False),
            id=name, task_queue="record")
        first = asyncio.ensure_future(send_turn(client, name, "my parcel is late"))
        question = await pending_question(handle)
        await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="A-17"))
        await first
        await send_turn(client, name, "@maths what is 2+2?")
        await handle.signal(TeamWorkflow.close)
        await handle.result()


CONVERSATIONS: dict[str, Callable[[Client, str], Awaitable[None]]] = {
    "acme_conversation": acme_conversation, "routing_conversation": routing_conversation,
}


async def one_shot(client: Client, name: str) -> None:
    example = EXAMPLES[name]
    compiled = example.build().compile()
    async with running_worker(client, "record", [compiled], ScriptedModel(example.SCRIPT)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=example.QUESTION,
                                                set_search_attributes=False),
            id=name, task_queue="record")  # the id test_replay replays it under
        await handle.result()


async def main(names: list[str]) -> None:
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal")
    ) as env:
        for name in names:
            await CONVERSATIONS.get(name, one_shot)(env.client, name)
            # The first run: for a conversation that continued as new, the run that did so.
            described = await env.client.get_workflow_handle(name).describe()
            first_run = described.raw_description.workflow_execution_info.first_run_id
            history = await env.client.get_workflow_handle(name, run_id=first_run).fetch_history()
            (HERE / f"{name}.json").write_text(history.to_json())
            print(f"wrote {HERE / f'{name}.json'}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [*EXAMPLES, *CONVERSATIONS]))
