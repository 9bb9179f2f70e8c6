"""Models without tool calling: an endpoint that refuses `tools` (as Ollama, llama.cpp and vLLM
answer for such models) and the agent goes on as plain chat, or fails readably if it can only
hand off."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams.activities.model import OpenAIBackend
from durable_teams.activities.model_toolless import refusal_reason
from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Supervisor, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion, error_body

pytestmark = pytest.mark.workflow

OLLAMA = "registry.ollama.ai/library/gemma:2b does not support tools"

REFUSALS = [
    (400, OLLAMA),
    (400, "tools param requires --jinja flag"),  # llama.cpp server without --jinja
    (500, "tools param requires --jinja flag"),  # older llama.cpp releases
    (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'),  # vLLM
    (400, "This model does not support function calling."),
    (422, "Tool calling is not supported for this model"),
    (400, "model 'phi' does not support tool use"),
    (400, "Unsupported parameter: 'tools' is not supported with this model."),
    (400, "Tools are not supported for this model"),  # TGI-style
    (400, "tool calling is not supported with this model"),
]

NOT_REFUSALS = [
    (429, OLLAMA),  # a rate limit is a rate limit, whatever it says
    (503, "does not support tools"),
    (400, "messages must alternate between user and assistant"),
    (400, "Invalid 'tools[0].function.name': string does not match pattern"),
    (401, "Incorrect API key provided"),
    (404, "model 'gemma:2b' not found, try pulling it first"),
    (400, "parallel_tool_calls is not supported"),  # an option, not the tools: dropping them would be wrong
    (400, "Invalid schema for function 'add': tool parameters must be an object"),
]


@pytest.mark.parametrize(("status", "text"), REFUSALS)
def test_the_ways_servers_refuse_tools_are_recognized(status: int, text: str) -> None:
    assert refusal_reason(status, error_body(text)) == text
    assert refusal_reason(status, {"error": text}) == text  # llama.cpp's bare string


@pytest.mark.parametrize(("status", "text"), NOT_REFUSALS)
def test_other_errors_are_not_taken_for_a_refusal_of_tools(status: int, text: str) -> None:
    assert refusal_reason(status, error_body(text)) is None


def test_openai_unsupported_parameter_on_tools_is_a_refusal() -> None:
    body = {"error": {"message": "Unsupported value", "type": "invalid_request_error",
                      "param": "tools", "code": "unsupported_parameter"}}
    assert refusal_reason(400, body) == "Unsupported value"


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


CALC = Swarm([Agent("calc", "You add numbers.", tools=[add], model="gemma:2b")], name="calc").compile()


async def test_a_model_that_refuses_tools_answers_as_plain_chat_and_is_remembered(
        client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(400, OLLAMA)
        fake.reply(completion("1 + 2 is 3."))
        fake.reply(completion("2 + 2 is 4."))
        backend = OpenAIBackend(base_url=fake.base_url, api_key="not-needed")
        async with running_worker(client, task_queue, [CALC], backend):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=CALC.spec, single_turn=False),
                id=f"toolless-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            first = await send_turn(client, handle.id, "1+2?")
            second = await send_turn(client, handle.id, "2+2?")
            transcript = await handle.query(TeamWorkflow.transcript, result_type=list[Message])
            await handle.terminate("test over")
    assert (first.status, first.text) == ("completed", "1 + 2 is 3.")
    assert (second.status, second.text) == ("completed", "2 + 2 is 4.")
    # the refused request carried tools, the retry (same activity) did not, and the second
    # turn's call went without tools at once: the backend remembered
    assert ["tools" in r for r in fake.requests] == [True, False, False]
    notices = [m for m in transcript if m.kind == "notice"]
    assert [m.name for m in notices] == ["calc", "calc"]  # once per turn
    assert notices[0].content == (
        "calc's tools were unavailable: the model 'gemma:2b' does not support tool calling (the "
        f"endpoint said: {OLLAMA}). calc answered as plain chat, without its tools (add).")
    # no model was shown the notice
    assert all(m.get("role") != "system" or "unavailable" not in (m.get("content") or "")
               for r in fake.requests for m in r["messages"])


def research(query: str) -> str:
    """Look something up."""
    return "facts"


ROUTER = Supervisor([Agent("researcher", "You research.", tools=[research], model="gemma:2b")],
                    name="router", model="gemma:2b").compile()


async def test_a_supervisor_that_can_only_hand_off_fails_the_turn_readably(
        client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(400, OLLAMA)
        fake.reply(completion("I would ask the researcher."))
        backend = OpenAIBackend(base_url=fake.base_url, api_key="not-needed")
        async with running_worker(client, task_queue, [ROUTER], backend):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=ROUTER.spec, single_turn=False),
                id=f"toolless-sup-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            reply = await send_turn(client, handle.id, "find facts")
            await handle.terminate("test over")
    assert reply.status == "failed"
    assert reply.text == (
        "supervisor cannot route this turn: the model 'gemma:2b' does not support tool calling "
        f"(the endpoint said: {OLLAMA}), and supervisor hands work to researcher only through "
        "tool calls. Give supervisor a model that supports tools, or a routing strategy that "
        'calls no model (strategy="rules" or "skills").')
    assert len(fake.requests) == 2  # the refused call and its plain retry; no worker ran
