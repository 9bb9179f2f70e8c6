"""Record the workflow histories that test_replay.py replays:

    python -m tests.record_histories faang_teams      # one history, by name
    python -m tests.record_histories                  # all of them

One-shot examples (`EXAMPLES`) answer one task. Conversations (`CONVERSATIONS`) are driven turn
by turn: updates, a person's answers, routing decisions and a continue-as-new are in their
histories, so replaying them pins that logic too. Parked conversations (`PARKED`) are recorded
mid-wait, as a rolling upgrade meets them: still running, waiting for a person's answer or
approval (a supervisor, a swarm after a handoff, a nested team's child and its parent).

The committed histories were recorded by 0.1.0, the baseline. Never re-record one to make a
test pass: each is the proof that conversations started with that release still replay under
the new code (docs/deployment.md, "Upgrading workers"). A later release records new ones under
new names, beside them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.client.send import send_turn, submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.examples import acme, faang, faang_teams, support
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor, Swarm
from durable_teams.worker.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import AWAITING_HUMAN
from durable_teams.workflows.labels import TASK, TEAM
from durable_teams.workflows.messages import Budgets, Message, ModelRequest, ModelResponse, Usage
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import binary, running_worker
from .waiting import pending_question, until

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
    compiled = Supervisor([Agent("orders", "Orders."), Agent("maths", "Sums.")], supervisor_name="router",
                          strategy="llm-decision", tools=["ask_human"], name="routing").compile()
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


async def parked(handle: WorkflowHandle) -> None:
    """Until `handle` waits (a question's timer, or a child running) with no task in flight."""
    in_flight = {EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED}
    waits = {EventType.EVENT_TYPE_TIMER_STARTED, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED}
    for _ in range(400):
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        if waits & set(kinds) and kinds[-1] not in in_flight:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{handle.id} never settled into a wait")


async def park(client: Client, name: str, compiled: CompiledTeam, script: dict[str, list[Step]],
               task: str, answers: list[HumanReply]) -> WorkflowHandle:
    """Start `compiled` on `task`, answer the first questions with `answers`, and return once
    it waits for the next one (the worker is gone afterwards: the history ends in the wait)."""
    async with running_worker(client, "record", [compiled], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=task),
            id=name, task_queue="record")
        for reply in answers:
            question = await pending_question(handle)
            await handle.execute_update(TeamWorkflow.answer, reply.model_copy(
                update={"question_id": question.question_id}))
        await pending_question(handle)
        await parked(handle)
    return handle


async def support_waiting_question(client: Client, name: str) -> None:
    """The supervisor asked the customer for the order number; no answer yet."""
    await park(client, name, support.build().compile(), support.SCRIPT, support.QUESTION, [])


async def support_waiting_approval(client: Client, name: str) -> None:
    """Answered, routed to repairs, the item looked up: the refund waits for a person's approval."""
    await park(client, name, support.build().compile(), support.SCRIPT, support.QUESTION,
               [HumanReply(question_id="", text="Order 4711")])


async def swarm_waiting_approval(client: Client, name: str) -> None:
    """The swarm's triage handed off to repairs, whose refund waits for approval."""
    script = {"triage": [call("transfer_to_issues_and_repairs")], "repairs": acme.SCRIPT["repairs"]}
    await park(client, name, acme.build().compile(), script, "My boots fell apart, refund them.", [])


async def support_labelled_waiting_question(client: Client, name: str) -> None:
    """Started as our clients start one (`Team` set), so the labels are asked at the question."""
    compiled = support.build().compile()
    async with running_worker(client, "record", [compiled], ScriptedModel(support.SCRIPT)):
        handle = await start_conversation(client, "support", ConversationInput(
            team=compiled.spec, task=support.QUESTION), id=name, task_queue="record")
        await pending_question(handle)
        await parked(handle)


def nested_asking_team() -> CompiledTeam:
    team = faang_teams.build()
    team.agents[0].tools = ["ask_human"]  # type: ignore[union-attr] - the nested team's lead asks
    return team.compile()


NESTED_ASKING = {**faang_teams.SCRIPT, "research_team": [
    call("ask_human", question="Which year?", suggestions=["2024"]),
    call("transfer_to_research_expert"), say(faang_teams.RESEARCH_SUMMARY)]}


async def nested_waiting(client: Client, name: str) -> dict[str, str]:
    """A nested team's lead asked the person: the child waits for the answer, the parent for
    the child. Both histories are kept (`nested_waiting_child`)."""
    compiled = nested_asking_team()
    async with running_worker(client, "record", [compiled], ScriptedModel(NESTED_ASKING)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION),
            id=name, task_queue="record")
        child = client.get_workflow_handle(f"{name}/research_team-1")
        for _ in range(400):  # the child exists once the parent's task started it
            try:
                await pending_question(child)
                break
            except Exception:  # noqa: BLE001 - not started yet
                await asyncio.sleep(0.05)
        await parked(child)
        await parked(handle)
    return {f"{name}_child": child.id}


class MeteredModel(ScriptedModel):
    """The scripted model, each call reporting 1,500 tokens (as a live API reports usage)."""

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        response = await super().complete(req, messages, tools)
        return response.model_copy(update={"usage": Usage(prompt_tokens=1400, completion_tokens=100)})


async def nested_budget_stop(client: Client, name: str) -> dict[str, str]:
    """A team of teams with a 6,000-token turn budget: the research team spends the 4,500 left
    to it and stops, then the parent stops, quoting the research expert's answer. Both
    histories are kept (`nested_budget_stop_child`)."""
    team = faang_teams.build()
    team.budgets = Budgets(max_tokens_per_turn=6000)
    compiled = team.compile()
    async with running_worker(client, "record", [compiled], MeteredModel(faang_teams.SCRIPT)):
        await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION,
                                                set_search_attributes=False),
            id=name, task_queue="record")
    return {f"{name}_child": f"{name}/research_team-1"}


async def concurrent_turns(client: Client, name: str) -> None:
    """40 turns submitted at once while the first is held (the updates race the workflow's own
    commands, as in the gateway's 100-turn test), then answered one by one, then closed."""
    from tests.test_client_robustness import GatedModel

    echo = Swarm([Agent("echo", "Repeat what you hear.")], name="echo").compile()
    model = GatedModel()
    async with running_worker(client, "record", [echo], model):
        handle = await start_conversation(client, "echo", ConversationInput(
            team=echo.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        accepted = await asyncio.gather(*(submit_turn(client, name, f"message {n}", turn_id=f"t{n}")
                                          for n in range(40)))
        model.gate.set()
        await asyncio.gather(*(turn.reply() for turn in accepted))
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def local_model_calls(client: Client, name: str) -> None:
    """Three turns of a team whose model calls are local activities (`ModelCalls(local=True)`:
    markers in history where a regular call has three activity events), then closed."""
    from durable_teams.workflows.options import ModelCalls

    echo = Swarm([Agent("echo", "Repeat what you hear.")], name="echo",
                 model_calls=ModelCalls(local=True)).compile()
    async with running_worker(client, "record", [echo], ScriptedModel({"echo": [say(f"echo {n}") for n in range(3)]})):
        handle = await start_conversation(client, "echo", ConversationInput(
            team=echo.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        for n in range(3):
            await send_turn(client, name, f"message {n}", turn_id=f"t{n}")
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def intents_conversation(client: Client, name: str) -> None:
    """Intents (an answer, a tool, an agent) matched before any model call; an agent on the
    Responses API whose reply carries reasoning; a model that refused tools (a notice)."""
    from durable_teams.workflows.intents import Intent

    def order_status(order: str) -> str:
        """The status of an order."""
        return f"Order {order}: shipped."

    billing = Agent("billing", "You handle refunds.", api="responses")
    support = Agent("support", "You help.", tools=["list_intents", order_status])
    team = Supervisor([billing, support], name="shop", intents=[
        Intent(phrases=["when are you open"], answer="9 to 5."),
        Intent(phrases=["where is my order"], tool="order_status", arguments={"order": "A-17"}),
        Intent(phrases=["refund my order"], agent="billing")]).compile()

    def script(req: ModelRequest, messages: Any, tools: Any) -> Step | ModelResponse:
        if req.agent == "billing":
            return Message(role="assistant", content="Refunded.",
                           reasoning=[{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}])
        return ModelResponse(message=say("Hello."), tools_unavailable="model does not support tools")

    async with running_worker(client, "record", [team], ScriptedModel(script)):
        handle = await start_conversation(client, "shop", ConversationInput(
            team=team.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        for text in ["When are you open?", "where is my order", "refund my order", "@support hi"]:
            await send_turn(client, name, text)
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def swarm_breakpoint_waiting(client: Client, name: str) -> None:
    """After 0.1.0: a breakpoint (`interrupt_before`) before look_up_item waits for a person."""
    compiled = acme.build().compile()
    compiled.spec.interrupt_before = ["look_up_item"]
    script = {"triage": [call("transfer_to_issues_and_repairs")], "repairs": acme.SCRIPT["repairs"]}
    await park(client, name, compiled, script, "My boots fell apart, refund them.", [])


async def forked_conversation(client: Client, name: str) -> None:
    """After 0.1.0: a fork (durable_teams/client/time_travel.py) started on its original's state
    at the end of turn 1, with an edited message as its first turn, then one turn more."""
    from durable_teams.client.time_travel import fork, list_checkpoints

    compiled = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    script = lambda req, messages, tools: say(f"heard: {messages[-1]['content']}")  # noqa: E731
    async with running_worker(client, "record", [compiled], ScriptedModel(script)):
        original = f"{name}-original"
        await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=original, task_queue="record")
        for text in ("one", "two"):
            await send_turn(client, original, text)
        end_of_1 = [p for p in await list_checkpoints(client, original) if p.kind == "turn_end"][0]
        await fork(client, original, at=end_of_1.id, message="two, edited", fork_id=name)
        await send_turn(client, name, "three")
        await client.get_workflow_handle(name).signal(TeamWorkflow.close)
        await client.get_workflow_handle(name).result()


async def rewound_conversation(client: Client, name: str) -> None:
    """After 0.1.0: a conversation rewound (a Temporal reset) to the end of turn 1 of 2, then
    given another turn 2: the run after the reset, with the reset's failed workflow task."""
    from durable_teams.client.time_travel import list_checkpoints, rewind

    compiled = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    script = lambda req, messages, tools: say(f"heard: {messages[-1]['content']}")  # noqa: E731
    async with running_worker(client, "record", [compiled], ScriptedModel(script)):
        await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        for text in ("one", "two"):
            await send_turn(client, name, text)
        end_of_1 = [p for p in await list_checkpoints(client, name) if p.kind == "turn_end"][0]
        await rewind(client, name, to=end_of_1.id)
        await send_turn(client, name, "two, again")
        await client.get_workflow_handle(name).signal(TeamWorkflow.close)
        await client.get_workflow_handle(name).result()


async def swarm_after_tool_waiting(client: Client, name: str) -> None:
    """After 0.1.0: parked at a breakpoint after look_up_item ran, before the model sees its result."""
    compiled = acme.build().compile()
    compiled.spec.interrupt_after = ["look_up_item"]
    script = {"triage": [call("transfer_to_issues_and_repairs")], "repairs": acme.SCRIPT["repairs"]}
    await park(client, name, compiled, script, "My boots fell apart, refund them.", [])


async def swarm_breakpoints(client: Client, name: str) -> None:
    """After 0.1.0: breakpoints before an agent (declared on it), before a tool (resumed with
    edited arguments) and after it (an edited result), after the agent; a second turn stopped
    before the agent ran."""
    from .time_travel_team import execute_refund, support_model

    compiled = Swarm([Agent("support", "Help customers.", tools=[execute_refund], interrupt_before=["agent"])],
                     interrupt_before=["execute_refund"], interrupt_after=["execute_refund", "support"]).compile()
    answers = [[HumanReply(question_id="", approved=True),
                HumanReply(question_id="", approved=True, arguments='{"order": "A2"}'),
                HumanReply(question_id="", approved=True, result="refund of A2 queued"),
                HumanReply(question_id="", approved=True)],
               [HumanReply(question_id="", approved=False, text="not now")]]
    async with running_worker(client, "record", [compiled], ScriptedModel(support_model)):
        handle = await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        for text, replies in zip(("refund A1", "refund B1"), answers, strict=True):
            turn = asyncio.ensure_future(send_turn(client, name, text))
            for reply in replies:
                question = await pending_question(handle)
                await handle.execute_update(TeamWorkflow.answer, reply.model_copy(
                    update={"question_id": question.question_id}))
                await until(lambda q=question: asked_gone(handle, q.question_id))
            await turn
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def deleted_response(client: Client, name: str) -> None:
    """After 0.1.0: a Responses API response deleted (the `hide_step` update under its first
    name, `delete_response`: workflows/hidden_steps.py) between two turns, and the same delete
    again."""
    compiled = Swarm([Agent("echo", "Repeat what you hear.")]).compile()
    script = lambda req, messages, tools: say(f"heard: {messages[-1]['content']}")  # noqa: E731
    async with running_worker(client, "record", [compiled], ScriptedModel(script)):
        await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=name, task_queue="record")
        await send_turn(client, name, "one")
        handle = client.get_workflow_handle(name)
        assert await handle.execute_update(TeamWorkflow.legacy_hide_step, "1_0_0")
        assert not await handle.execute_update(TeamWorkflow.legacy_hide_step, "1_0_0")
        await send_turn(client, name, "two")
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def a2a_push_delivered(client: Client, name: str) -> None:
    """After 0.1.0: an A2A task's push workflow (workflows/a2a_push.py) delivering a support
    turn's question, its approval (the first delivery answered 503: retried) and its
    completion to a local receiver, then its config deleted (the workflow ends)."""
    from durable_teams.workflows.a2a_push import A2APushWorkflow, PushConfig, PushInput

    from .push_receiver import receiving

    compiled = support.build().compile()
    thread = f"{name}-thread"
    async with running_worker(client, "record", [compiled], ScriptedModel(support.SCRIPT)), receiving() as receiver:
        await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=thread, task_queue="record")
        conversation = client.get_workflow_handle(thread)
        turn = asyncio.ensure_future(send_turn(client, thread, support.QUESTION))
        asked = await pending_question(conversation)
        push = await client.start_workflow(A2APushWorkflow.run, PushInput(
            thread=thread, turn=1, allow_private=True, poll_seconds=0.05, retry_seconds=0.1, configs=[
                PushConfig(id="hook", url=receiver.url, token="recorded-token")]), id=name, task_queue="record")

        async def told(n: int) -> bool:
            return len(receiver.received) >= n
        await until(lambda: told(1), "the question's notification")
        receiver.answers = [503]
        await conversation.execute_update(TeamWorkflow.answer, HumanReply(question_id=asked.question_id, text="4711"))
        approval = await until(lambda: fresh_question(conversation, asked.question_id), "the approval")
        await until(lambda: told(3), "the approval's notification, retried once")
        await conversation.execute_update(TeamWorkflow.answer, HumanReply(question_id=approval.question_id,
                                                                         approved=True))
        await turn
        await until(lambda: told(4), "the completion's notification")
        assert await push.execute_update(A2APushWorkflow.delete_config, "hook")
        await push.result()
        await conversation.signal(TeamWorkflow.close)


async def a2a_push_late_config(client: Client, name: str) -> None:
    """After 0.1.0: a push workflow that told its first config the support turn's question, then
    got a second config set while the task still asks it (told that question too, under the
    patch `a2a-push-tell-a-late-config-the-state-told`), both configs then deleted."""
    from durable_teams.workflows.a2a_push import A2APushWorkflow, PushConfig, PushInput
    from durable_teams.workflows.a2a_tasks import TaskState
    from durable_teams.workflows.push_targets import from_the_start, signature
    from durable_teams.workflows.turn_states import question_text

    from .push_receiver import receiving

    compiled = support.build().compile()
    thread = f"{name}-thread"
    async with running_worker(client, "record", [compiled], ScriptedModel(support.SCRIPT)), receiving() as receiver:
        await start_conversation(client, compiled.spec.name, ConversationInput(
            team=compiled.spec, single_turn=False, set_search_attributes=False), id=thread, task_queue="record")
        conversation = client.get_workflow_handle(thread)
        turn = asyncio.ensure_future(send_turn(client, thread, support.QUESTION))
        asked = await pending_question(conversation)
        push = await client.start_workflow(A2APushWorkflow.run, PushInput(
            thread=thread, turn=1, last=from_the_start(), allow_private=True, poll_seconds=0.05, retry_seconds=0.1,
            configs=[PushConfig(id="hook", url=receiver.url)]), id=name, task_queue="record")

        async def told(n: int) -> bool:
            return len(receiver.received) >= n
        await until(lambda: told(1), "the question's notification")
        seen = signature(TaskState("INPUT_REQUIRED", question_text(asked)))
        await push.execute_update(A2APushWorkflow.set_config, PushConfig(id="late", url=receiver.url,
                                                                         state_seen=seen))
        await until(lambda: told(2), "the question told to the late config")
        for config in ("hook", "late"):
            assert await push.execute_update(A2APushWorkflow.delete_config, config)
        await push.result()
        turn.cancel()
        await conversation.terminate("recorded")


async def fresh_question(handle: WorkflowHandle, seen: str) -> Any:
    pending = await handle.query(TeamWorkflow.pending_questions)
    return next((q for q in pending if q.question_id != seen), None)


async def asked_gone(handle: WorkflowHandle, question_id: str) -> bool:
    pending = await handle.query(TeamWorkflow.pending_questions)
    return all(q.question_id != question_id for q in pending)


CONVERSATIONS: dict[str, Callable[[Client, str], Awaitable[dict[str, str] | None]]] = {
    "acme_conversation": acme_conversation, "routing_conversation": routing_conversation,
    "support_waiting_question": support_waiting_question,
    "support_waiting_approval": support_waiting_approval,
    "swarm_waiting_approval": swarm_waiting_approval,
    "nested_waiting": nested_waiting,
    "support_labelled_waiting_question": support_labelled_waiting_question,
    "nested_budget_stop": nested_budget_stop,
    "concurrent_turns": concurrent_turns,
    "local_model_calls": local_model_calls,
    # after 0.1.0: intents, api="responses", a model that refused tools
    "intents_conversation": intents_conversation,
    # after 0.1.0: time travel (docs/time-travel.md)
    "swarm_breakpoint_waiting": swarm_breakpoint_waiting,
    "forked_conversation": forked_conversation,
    "swarm_breakpoints": swarm_breakpoints,
    "swarm_after_tool_waiting": swarm_after_tool_waiting,
    "rewound_conversation": rewound_conversation,
    # after 0.1.0: the Responses API's DELETE (docs/responses.md)
    "deleted_response": deleted_response,
    # after 0.1.0: A2A push notifications (docs/a2a.md)
    "a2a_push_delivered": a2a_push_delivered,
    # after 0.1.0: a push config set after the state the task is in was told (docs/a2a.md)
    "a2a_push_late_config": a2a_push_late_config,
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


LATEST_RUN = {"rewound_conversation"}
"""Recorded from the workflow's latest run."""


async def save(client: Client, stem: str, workflow_id: str) -> None:
    # The first run: for a conversation that continued as new, the run that did so.
    described = await client.get_workflow_handle(workflow_id).describe()
    first_run = described.raw_description.workflow_execution_info.first_run_id
    if stem in LATEST_RUN:  # a reset's new run, not the run it abandoned
        first_run = described.run_id
    history = await client.get_workflow_handle(workflow_id, run_id=first_run).fetch_history()
    (HERE / f"{stem}.json").write_text(history.to_json())
    print(f"wrote {HERE / f'{stem}.json'}")


async def main(names: list[str]) -> None:
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal"),
        search_attributes=[AWAITING_HUMAN, TEAM, TASK],
    ) as env:
        for name in names:
            extra = await CONVERSATIONS.get(name, one_shot)(env.client, name)
            for stem, workflow_id in {name: name, **(extra or {})}.items():
                await save(env.client, stem, workflow_id)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [*EXAMPLES, *CONVERSATIONS]))
