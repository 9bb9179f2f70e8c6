"""ABI's intents: phrases answered before any model call (a fixed answer, a tool, an agent),
matched exactly after normalizing, or by embeddings above a threshold; and the built-ins
`list_intents`, `get_current_active_agent`, `get_supervisor_agent`."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from durable_teams.client.events import events_of
from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Supervisor, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.intents import (
    Intent,
    IntentSimilarity,
    match_exact,
    match_similar,
    normalize,
)
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow

# ---- pure ----------------------------------------------------------------------------------


def test_normalizing_ignores_case_punctuation_and_spacing() -> None:
    assert normalize("  When are you OPEN?!  ") == "when are you open"
    assert normalize("opening—hours...") == "opening hours"
    assert normalize("Straße") == normalize("STRASSE") == "strasse"  # casefold, not lower
    assert normalize("?!") == ""


HOURS = Intent(phrases=["opening hours", "When are you open?"], answer="9 to 5.")
REFUND = Intent(phrases=["refund my order"], agent="billing")


def test_exact_match_takes_the_first_intent_whose_phrase_equals_the_message() -> None:
    found = [("supervisor", HOURS), ("supervisor", REFUND)]
    match = match_exact(found, "WHEN are you open")
    assert match is not None and (match.owner, match.intent, match.phrase, match.how) == (
        "supervisor", HOURS, "When are you open?", "exact")
    assert match_exact(found, "when are you open on sunday") is None  # not a substring search
    assert match_exact(found, "   ") is None


def test_similarity_takes_the_most_similar_phrase_at_or_over_the_threshold() -> None:
    found = [("a", HOURS), ("b", REFUND)]  # phrases: opening hours, when are you open, refund...
    phrases = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]
    best = match_similar(found, [0.6, 0.8], phrases, threshold=0.9)
    assert best is not None and (best.owner, best.phrase, best.how) == ("a", "When are you open?", "similarity 0.96")
    assert match_similar(found, [0.6, 0.8], phrases, threshold=0.99) is None
    assert match_similar(found, [0.0, 0.0], phrases, threshold=0.1) is None  # a zero vector matches nothing


@pytest.mark.parametrize("kwargs", [
    {"phrases": ["hi"]},  # no target
    {"phrases": ["hi"], "answer": "hello", "agent": "x"},  # two targets
    {"phrases": [], "answer": "hello"},
    {"phrases": ["?!"], "answer": "hello"},  # nothing left after normalizing
    {"phrases": ["hi"], "answer": "hello", "arguments": {"a": 1}},
])
def test_an_intent_has_phrases_and_exactly_one_target(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Intent(**kwargs)


def order_status(order: str = "latest") -> str:
    """The status of an order."""
    RUNS.append(order)
    return f"Order {order}: shipped."


def refund(order: str) -> str:
    """Refund an order."""
    return "refunded"


RUNS: list[str] = []


def test_intents_naming_what_is_not_there_are_refused_at_definition() -> None:
    billing = Agent("billing", "You refund.", tools=[order_status], model="m")
    with pytest.raises(TeamError, match="calls 'nope', which is not a tool of the team"):
        Supervisor([billing], intents=[Intent(phrases=["x"], tool="nope")])
    with pytest.raises(TeamError, match="hands to 'ghost', which is not an agent"):
        Supervisor([billing], intents=[Intent(phrases=["x"], agent="ghost")])
    with pytest.raises(TeamError, match="phrase 'Hello!' is declared twice"):
        Supervisor([billing], intents=[Intent(phrases=["hello"], answer="a"), Intent(phrases=["Hello!"], answer="b")])
    from durable_teams.teams.tools import tool
    approve = tool(needs_approval=True)(refund)
    with pytest.raises(TeamError, match="needs a person's approval"):
        Supervisor([Agent("b", "x", tools=[approve], model="m")], intents=[Intent(phrases=["x"], tool="refund")])


def test_an_intents_tool_arguments_are_checked_where_the_team_is_defined() -> None:
    """Arguments a tool's parameters do not take fail at definition, naming the intent and the
    field, as a model's call would at run time: a missing required one, an unknown one, an
    injected one, a wrong type; in a swarm's agent and a nested team too."""
    def charge(amount: int, context_variables: dict) -> str:
        """Charge an amount."""
        return str(amount)

    billing = Agent("billing", "You refund.", tools=[order_status, refund, charge], model="m")
    cases = [
        ({}, "refund", r"the intent of the team for 'x' calls 'refund'.*order.*[Ff]ield required"),
        ({"order": "A1", "reason": "late"}, "refund", r"calls 'refund'.*reason"),
        ({"amount": "lots"}, "charge", r"calls 'charge'.*amount"),
        ({"amount": 5, "context_variables": {}}, "charge", r"calls 'charge'.*context_variables"),
    ]
    for arguments, name, message in cases:
        with pytest.raises(TeamError, match=message):
            Supervisor([billing], intents=[Intent(phrases=["x"], tool=name, arguments=arguments)])
    with pytest.raises(TeamError, match=r"the intent of agent 'billing' for 'y' calls 'refund'"):
        Swarm([Agent("billing", "x", tools=[refund], model="m",
                     intents=[Intent(phrases=["y"], tool="refund")])])
    inner = Supervisor([billing], name="inner", model="m")
    inner.intents = [Intent(phrases=["z"], tool="refund")]  # set after its own compile
    with pytest.raises(TeamError, match=r"team 'inner': the intent of the team for 'z'"):
        Supervisor([inner], name="outer", model="m")
    # arguments it takes (a default left out, an int for an int) are accepted
    Supervisor([billing], intents=[Intent(phrases=["a"], tool="order_status"),
                                   Intent(phrases=["b"], tool="charge", arguments={"amount": 5})])


def test_a_team_without_intents_compiles_to_the_same_wire_input() -> None:
    from pydantic import TypeAdapter

    from durable_teams.workflows.messages import TeamSpec
    spec = Supervisor([Agent("a", "x", model="m")]).compile().spec
    dumped = TypeAdapter(TeamSpec).dump_python(spec, mode="json")
    assert "intents" not in dumped and "intent_similarity" not in dumped and "api" not in dumped
    assert "intents" not in dumped["agents"]["a"] and "api" not in dumped["agents"]["a"]


# ---- conversations -------------------------------------------------------------------------


def shop(**options: Any) -> Supervisor:
    billing = Agent("billing", "You handle refunds.", tools=[order_status], model="m",
                    description="Refunds and orders.")
    support = Agent("support", "You help.", model="m", tools=["list_intents", "get_current_active_agent",
                                                            "get_supervisor_agent"])
    return Supervisor([billing, support], name="shop", model="m", intents=[
        Intent(phrases=["opening hours", "when are you open"], answer="We are open 9 to 5, Monday to Friday."),
        Intent(phrases=["refund my order"], agent="billing"),
        Intent(phrases=["where is my order"], tool="order_status", arguments={"order": "A-17"}),
    ], **options)


async def conversation(client: Client, task_queue: str, model: ScriptedModel, texts: list[str],
                       team: Supervisor | Swarm | None = None) -> tuple[list, list[Message], dict]:
    compiled = (team or shop()).compile()
    async with running_worker(client, task_queue, [compiled], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False),
            id=f"intents-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        replies = [await send_turn(client, handle.id, text) for text in texts]
        log = await handle.query(TeamWorkflow.transcript, True, result_type=list[Message])
        memo = await (await handle.describe()).memo()
        await handle.terminate("test over")
    return replies, log, memo


async def test_an_intent_with_an_answer_makes_no_model_call(client: Client, task_queue: str) -> None:
    model = ScriptedModel({})  # any model call would fail the turn: the script is empty
    replies, log, memo = await conversation(client, task_queue, model, ["When are you OPEN?"])
    assert (replies[0].status, replies[0].text, replies[0].agent) == (
        "completed", "We are open 9 to 5, Monday to Friday.", "supervisor")
    assert len(model.requests) == 0
    assert [(m.role, m.kind, m.content) for m in log] == [
        ("user", "message", "When are you OPEN?"),
        ("assistant", "routing", "Intent matched (exact): 'when are you open' -> answer"),
        ("assistant", "message", "We are open 9 to 5, Monday to Friday."),
    ]
    # the event stream shows the match as a routing step; the Web UI's history, as a memo change
    assert [e.type for i, m in enumerate(log) for e in events_of(i, m)] == ["user_message", "routing", "ai_message"]
    assert memo["last_intent"] == {"agent": "supervisor", "phrase": "when are you open", "how": "exact",
                                   "action": "answer"}


def test_fullwidth_and_other_compatibility_forms_match_after_nfkc() -> None:
    assert normalize("ｗｈｅｎ ａｒｅ ｙｏｕ ＯＰＥＮ？") == "when are you open"
    assert normalize("ｗｈｅｎ", compatibility=False) != "when"  # as conversations before NFKC
    match = match_exact([("supervisor", HOURS)], "ＯＰＥＮＩＮＧ　ＨＯＵＲＳ")
    assert match is not None and match.phrase == "opening hours"
    assert match_exact([("supervisor", HOURS)], "ＯＰＥＮＩＮＧ　ＨＯＵＲＳ", compatibility=False) is None


@pytest.mark.slow
async def test_a_fullwidth_message_matches_and_a_history_from_before_nfkc_replays_as_it_ran(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new conversation matches the fullwidth message (no model call); a conversation that
    ran before NFKC (its message went to the model) replays under this code without
    non-determinism (the patch marker is asked for only where NFKC changes the match)."""
    fullwidth = "ｗｈｅｎ ａｒｅ ｙｏｕ ｏｐｅｎ"
    model = ScriptedModel({})
    replies, log, _ = await conversation(client, task_queue, model, [fullwidth])
    assert replies[0].text == "We are open 9 to 5, Monday to Friday." and len(model.requests) == 0
    assert log[1].content == "Intent matched (exact): 'when are you open' -> answer"

    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from durable_teams.workflows import intent_turns
    old = ScriptedModel({"supervisor": [say("The model answered.")]})
    with monkeypatch.context() as patched:  # the code before NFKC: matched without it, no marker
        patched.setattr(intent_turns, "matched_exactly",
                        lambda found, text: match_exact(found, text, compatibility=False))
        compiled = shop().compile()
        async with running_worker(client, task_queue, [compiled], old):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False),
                id=f"intents-old-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            before = await send_turn(client, handle.id, fullwidth)
            await handle.terminate("test over")
    assert before.text == "The model answered." and len(old.requests) == 1
    history = await handle.fetch_history()
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)  # raises on non-determinism


async def test_an_intent_hands_the_turn_to_an_agent(client: Client, task_queue: str) -> None:
    model = ScriptedModel({"billing": [say("Your refund is on its way.")]})
    replies, log, _ = await conversation(client, task_queue, model, ["Refund my order!"])
    assert (replies[0].text, replies[0].agent) == ("Your refund is on its way.", "billing")
    assert [r.agent for r, _, _ in model.requests] == ["billing"]  # the supervisor's model was never asked
    assert log[1].content == "Intent matched (exact): 'refund my order' -> agent billing"


async def test_an_intent_calls_a_tool_with_its_arguments(client: Client, task_queue: str) -> None:
    RUNS.clear()
    model = ScriptedModel({})
    replies, log, _ = await conversation(client, task_queue, model, ["where is my order"])
    assert (replies[0].status, replies[0].text) == ("completed", "Order A-17: shipped.")
    assert RUNS == ["A-17"] and len(model.requests) == 0
    call_message = log[2]
    assert [(c.name, json.loads(c.arguments)) for c in call_message.tool_calls] == [("order_status", {"order": "A-17"})]
    assert (log[3].role, log[3].tool_call_id, log[3].content) == ("tool", call_message.tool_calls[0].id,
                                                                  "Order A-17: shipped.")


async def test_a_message_no_intent_matches_goes_to_the_model(client: Client, task_queue: str) -> None:
    model = ScriptedModel({"supervisor": [say("Hello!")]})
    replies, log, _ = await conversation(client, task_queue, model, ["hello there"])
    assert replies[0].text == "Hello!" and len(model.requests) == 1
    assert not any(m.kind == "routing" for m in log)


async def test_the_abi_built_ins_answer_from_the_team(client: Client, task_queue: str) -> None:
    model = ScriptedModel({
        "supervisor": [call("transfer_to_support"), say("done")],
        "support": [call("list_intents"), call("get_current_active_agent"), call("get_supervisor_agent"),
                    say("ok")],
    })
    await conversation(client, task_queue, model, ["tell me about yourself"])
    last_support = [msgs for req, msgs, _ in model.requests if req.agent == "support"][-1]
    answers = [m["content"] for m in last_support if m["role"] == "tool"]
    assert answers[-3:] == [
        "opening hours | when are you open -> answer\nrefund my order -> agent billing\n"
        "where is my order -> tool order_status",
        "support",
        "supervisor",
    ]


class EmbeddingModel(ScriptedModel):
    """A scripted model that embeds text as word counts over a small vocabulary."""

    VOCABULARY = ["open", "hours", "refund", "order", "where", "when", "time", "close"]

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.embedded: list[list[str]] = []

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        self.embedded.append(texts)
        return [[float(re.findall(r"\w+", t.lower()).count(w)) for w in self.VOCABULARY] for t in texts]


async def test_similarity_matches_a_reworded_message_through_embeddings(client: Client, task_queue: str) -> None:
    model = EmbeddingModel({"supervisor": [say("I do not know.")]})
    team = shop(intent_similarity=IntentSimilarity(model="embedder", threshold=0.7))
    replies, log, _ = await conversation(client, task_queue, model, ["what hours are you open", "pizza?"], team)
    assert replies[0].text == "We are open 9 to 5, Monday to Friday."
    assert log[1].content.startswith("Intent matched (similarity 0.71)") and "'opening hours'" in log[1].content
    assert replies[1].text == "I do not know."  # below the threshold: the model answers
    assert model.embedded[0][0] == "what hours are you open" and len(model.embedded[0]) == 1 + 4


async def test_without_an_embeddings_endpoint_intents_match_exactly_and_say_so(client: Client, task_queue: str) -> None:
    model = ScriptedModel({"supervisor": [say("I do not know.")]})
    team = shop(intent_similarity=IntentSimilarity(model="embedder"))
    replies, log, _ = await conversation(client, task_queue, model, ["opening hours", "what hours are you open"], team)
    assert replies[0].text.startswith("We are open")  # exact: no embeddings needed
    assert replies[1].text == "I do not know."
    notices = [m.content for m in log if m.kind == "notice"]
    assert len(notices) == 1 and "cannot embed text" in notices[0]


async def test_a_swarm_agents_own_intents_apply_while_it_is_active(client: Client, task_queue: str) -> None:
    desk = Agent("desk", "You greet.", model="m", handoffs=["billing"],
                 intents=[Intent(phrases=["billing please"], agent="billing")])
    billing = Agent("billing", "You bill.", model="m", intents=[Intent(phrases=["thanks"], answer="You're welcome.")])
    model = ScriptedModel({"billing": [say("Billing here.")]})
    replies, _, _ = await conversation(client, task_queue, model, ["billing please", "thanks"],
                                       Swarm([desk, billing], name="frontdesk"))
    assert [(r.agent, r.text) for r in replies] == [("billing", "Billing here."), ("billing", "You're welcome.")]
    assert len(model.requests) == 1


async def test_the_openai_backend_embeds_through_v1_embeddings_with_errors_mapped() -> None:
    from temporalio.exceptions import ApplicationError

    from durable_teams.activities.model import OpenAIBackend

    from .fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.reply({"object": "list", "model": "embedder", "usage": {"prompt_tokens": 4, "total_tokens": 4},
                    "data": [{"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
                             {"object": "embedding", "index": 0, "embedding": [0.123456789, 0.5]}]})
        fake.error(401, "bad key")
        backend = OpenAIBackend(base_url=fake.base_url, api_key="sk-test")
        try:
            assert await backend.embed("embedder", ["a", "b"]) == [[0.123457, 0.5], [0.0, 1.0]]
            with pytest.raises(ApplicationError) as err:
                await backend.embed("embedder", ["a"])
        finally:
            await backend.aclose()
    assert fake.paths == ["/v1/embeddings"] * 2 and fake.requests[0]["input"] == ["a", "b"]
    assert err.value.non_retryable and err.value.type == "ModelAuthError"


async def test_the_gateways_event_stream_shows_the_match_as_a_routing_step(client: Client, task_queue: str) -> None:
    import httpx

    from .gateway_helpers import read_sse, running_gateway

    model = ScriptedModel({})
    compiled = shop().compile()
    async with running_worker(client, task_queue, [compiled], model), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "shop"})).json()["thread_id"]
        async with http.stream("POST", f"/threads/{thread}/turns", json={"text": "opening hours!"}) as resp:
            frames = await read_sse(resp)
    assert [(name, data.get("agent"), data["text"]) for name, data in frames] == [
        ("user_message", None, "opening hours!"),
        ("routing", "supervisor", "Intent matched (exact): 'opening hours' -> answer"),
        ("ai_message", "supervisor", "We are open 9 to 5, Monday to Friday."),
        ("done", "supervisor", "We are open 9 to 5, Monday to Friday."),
    ]
    assert model.requests == []


@pytest.mark.slow  # over a second: out of the quick loop
async def test_an_agent_an_intent_chose_resumes_after_continue_as_new_and_answers_the_turn(
        client: Client, task_queue: str) -> None:
    import asyncio

    from durable_teams.workflows.state import HumanReply

    from .waiting import pending_question

    def script(req: Any, messages: list[dict[str, Any]], tools: Any) -> Message:
        last = messages[-1]
        if req.agent == "billing" and last["role"] == "tool":
            return say(f"Refunded {last['content']}.")
        if req.agent == "billing":
            return call("ask_human", question="Which order?")
        raise AssertionError(f"{req.agent} was asked")  # the supervisor's model never is

    billing = Agent("billing", "You refund.", tools=["ask_human"], model="m")
    team = Supervisor([billing], name="refunds", model="m",
                      intents=[Intent(phrases=["refund my order"], agent="billing")]).compile()
    team.spec.continue_as_new_after_events = 10  # passed by the time billing asks: the run continues as new
    async with running_worker(client, task_queue, [team], ScriptedModel(script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"intent-can-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        first_run = handle.result_run_id
        asking = asyncio.ensure_future(send_turn(client, handle.id, "refund my order"))
        latest = client.get_workflow_handle_for(TeamWorkflow.run, handle.id)
        question = await pending_question(latest)
        await latest.execute_update(TeamWorkflow.answer, HumanReply(question_id=question.question_id, text="A-17"))
        reply = await asking
        described = await latest.describe()
        await latest.terminate("test over")
    assert described.run_id != first_run  # the turn crossed runs
    assert (reply.agent, reply.text, reply.status) == ("billing", "Refunded A-17.", "completed")
