"""Models served only through the Responses API (`api="responses"`): the transcript converted
to input items and back (pure), streamed text deltas, reasoning items passed back, the same
error mapping; and the FAANG team answering through a scripted `/v1/responses` endpoint."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_teams.activities.model import OpenAIBackend
from durable_teams.activities.model_parse import BadModelResponse
from durable_teams.activities.model_responses import (
    parse_response,
    read_responses_stream,
    responses_input,
    responses_params,
    responses_tools,
)
from durable_teams.examples import faang
from durable_teams.live.hub import LocalHub
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, ToolCall, ToolSpec
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, Raw, error_body, response_body, response_stream

pytestmark = pytest.mark.workflow

# ---- pure: the transcript as input items, and back ------------------------------------------

VIEW = [
    Message(role="user", content="what is 1 + 2?"),
    Message(role="assistant", content=None, name="calc", reasoning=[{"type": "reasoning", "id": "rs_1",
                                                                     "summary": [], "encrypted_content": "gAAA"}],
            tool_calls=[ToolCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')]),
    Message(role="tool", content="3", name="add", tool_call_id="call_1"),
    Message(role="assistant", content="It is 3.", name="calc"),
    Message(role="system", content="Be brief."),
]


def test_a_view_becomes_responses_input_items_in_order() -> None:
    assert responses_input(VIEW, "calc") == [
        {"role": "user", "content": "what is 1 + 2?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "3"},
        {"role": "assistant", "content": "It is 3."},
        {"role": "system", "content": "Be brief."},
    ]
    # another agent's reasoning is not passed to this one's model
    assert not [i for i in responses_input(VIEW, "supervisor") if i.get("type") == "reasoning"]


def test_tools_and_options_take_the_responses_shape() -> None:
    tool = ToolSpec(name="add", description="Add.", parameters={"type": "object", "properties": {}})
    assert responses_tools([tool]) == [{"type": "function", "name": "add", "description": "Add.",
                                        "parameters": {"type": "object", "properties": {}}, "strict": False}]
    req = ModelRequest(workflow_id="w", run_id="r", agent="calc", model="o4-mini", transcript_length=1, agent_run=0,
                       instructions="You add.", max_tokens=50, temperature=0.2, parallel_tool_calls=False,
                       output_schema={"type": "object"}, api="responses")
    params = responses_params(req, VIEW[:1], [tool], stream=True)
    assert params == {
        "model": "o4-mini", "input": [{"role": "user", "content": "what is 1 + 2?"}], "store": False,
        "include": ["reasoning.encrypted_content"], "instructions": "You add.",
        "tools": responses_tools([tool]), "parallel_tool_calls": False, "stream": True, "temperature": 0.2,
        "max_output_tokens": 50,
        "text": {"format": {"type": "json_schema", "name": "output", "schema": {"type": "object"}, "strict": False}},
    }
    # a request without the option stays as it was recorded (the field is left out)
    assert "api" not in ModelRequest(workflow_id="w", run_id="r", agent="a", model="m", agent_run=0,
                                     transcript_length=0).model_dump()


def test_a_response_becomes_our_reply_with_reasoning_kept() -> None:
    body = response_body("Let me add.", [("call_9", "add", '{"a": 1, "b": 2}')], reasoning="gAAB")
    reply = parse_response(body, "o4-mini")
    assert reply.message.content == "Let me add."
    assert reply.message.tool_calls == [ToolCall(id="call_9", name="add", arguments='{"a": 1, "b": 2}')]
    assert reply.message.reasoning == [{"type": "reasoning", "id": "rs_4", "summary": [], "encrypted_content": "gAAB"}]
    assert (reply.finish_reason, reply.usage.prompt_tokens, reply.usage.completion_tokens) == ("tool_calls", 13, 5)
    # and the reply, put back into a view, gives the items the model produced
    mine = reply.message.model_copy(update={"name": "calc"})
    assert responses_input([mine], "calc")[0]["encrypted_content"] == "gAAB"


def test_incomplete_failed_and_malformed_responses() -> None:
    cut = parse_response(response_body("Half", status="incomplete", incomplete_reason="max_output_tokens"), "m")
    assert (cut.message.content, cut.finish_reason) == ("Half", "length")
    failed = {**response_body(), "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    with pytest.raises(BadModelResponse, match="boom"):
        parse_response(failed, "m")
    with pytest.raises(BadModelResponse, match="without an output list"):
        parse_response({"id": "x", "object": "response"}, "m")


async def lines_of(raw: Raw) -> AsyncIterator[str]:
    text = raw.body if isinstance(raw.body, str) else raw.body.decode()
    for line in text.split("\n"):
        yield line


async def test_a_stream_emits_text_deltas_and_ends_with_the_whole_response() -> None:
    body = response_body("The answer is 3.")
    deltas: list[str] = []
    final = await read_responses_stream(lines_of(response_stream(body)), deltas.append, 1 << 20)
    assert "".join(deltas) == "The answer is 3." and len(deltas) == 4
    assert final == body
    cut = Raw("event: response.created\ndata: {\"type\": \"response.created\"}\n\n")
    with pytest.raises(BadModelResponse, match="ended before the response was complete") as err:
        await read_responses_stream(lines_of(cut), deltas.append, 1 << 20)
    assert err.value.retry == "once"
    failed = Raw('data: {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}\n\n')
    assert await read_responses_stream(lines_of(failed), deltas.append, 1 << 20) == {
        "error": {"code": "rate_limit_exceeded", "message": "slow down"}}


# ---- conversations through a scripted /v1/responses endpoint ----------------------------------


def faang_script(calls: dict[str, int]) -> Any:
    """The FAANG walkthrough's replies (faang.SCRIPT) as a Responses endpoint gives them,
    streamed, each with a reasoning item: the agent is told by its instructions."""
    by_instructions = {spec.instructions: name for name, spec in faang.build().compile().spec.agents.items()}

    def answer(path: str, body: dict[str, Any]) -> Raw | None:
        if not path.endswith("/responses"):
            return None
        agent = by_instructions.get(body.get("instructions", ""), "supervisor")
        index = calls[agent] = calls.get(agent, 0) + 1
        step = faang.SCRIPT[agent][index - 1]
        tool_calls = [(f"call_{agent}_{index}_{j}", c.name, c.arguments) for j, c in enumerate(step.tool_calls)]
        return response_stream(response_body(step.content or None, tool_calls, reasoning=f"enc-{agent}-{index}"))

    return answer


@pytest.mark.slow  # a whole FAANG conversation over HTTP, ten streamed model calls: over a second
async def test_the_faang_team_answers_through_the_responses_api_streamed(client: Client, task_queue: str) -> None:
    team = faang.build(model="o4-mini")
    team.api = "responses"
    compiled = team.compile()
    hub = LocalHub()
    calls: dict[str, int] = {}
    workflow_id = f"faang-responses-{uuid.uuid4().hex[:8]}"
    with FakeOpenAI(script=faang_script(calls)) as fake:
        backend = OpenAIBackend(base_url=fake.base_url, api_key="sk-test", stream=True)
        async with hub.subscribe(workflow_id) as deltas, \
                running_worker(client, task_queue, [compiled], backend, live_hub=hub):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION),
                id=workflow_id, task_queue=task_queue)
            result = await handle.result()
            full = await handle.query(TeamWorkflow.transcript, True, result_type=list[Message])
            await asyncio.sleep(0)
            streamed = [deltas.get_nowait() for _ in range(deltas.qsize())]
    assert result.answer == faang.ANSWER and "1,977,586" in result.answer
    assert set(fake.paths) == {"/v1/responses"} and len(fake.paths) == 10
    assert all(r["stream"] is True and r["store"] is False for r in fake.requests)
    # the math expert's tools in the Responses shape; its add calls chained through real tools
    math = [r for r in fake.requests if r.get("instructions", "").startswith("You are a math expert")]
    assert [t["name"] for t in math[0]["tools"]] == ["add", "multiply"]
    assert [m.content for m in full if m.role == "tool" and m.name == "add"] == [
        "231317.0", "1782317.0", "1796317.0", "1977586.0"]
    # each call passes back the reasoning of the calls before it in its view, with their outputs
    last_math = math[-1]["input"]
    assert [i["encrypted_content"] for i in last_math if i.get("type") == "reasoning"] == [
        f"enc-math_expert-{n}" for n in range(1, 5)]
    outputs = [i["output"] for i in last_math if i.get("type") == "function_call_output"]
    assert outputs[-1] == "1977586.0"
    # the supervisor's final answer reached the live hub as it was written
    final_call = "supervisor:2"
    assert "".join(d.text for d in streamed if d.call == final_call) == faang.ANSWER


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


CALC = Swarm([Agent("calc", "You add numbers.", tools=[add], model="o4-mini", api="responses")],
             name="calc-responses").compile()


async def run_calc(client: Client, task_queue: str, fake: FakeOpenAI, stream: bool = False) -> Any:
    backend = OpenAIBackend(base_url=fake.base_url, api_key="sk-test", stream=stream)
    async with running_worker(client, task_queue, [CALC], backend):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=CALC.spec, task="1+2?"),
            id=f"calc-responses-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        return await handle.result(), await handle.query(TeamWorkflow.transcript, result_type=list[Message])


@pytest.mark.slow  # over a second: out of the quick loop
async def test_an_agent_with_api_responses_has_its_errors_mapped_and_retried(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(429, "slow down", {"retry-after-ms": "100"})
        fake.reply(response_body(None, [("call_a", "add", '{"a": 1, "b": 2}')]))
        fake.reply(response_body("1 + 2 = 3."))
        result, _ = await run_calc(client, task_queue, fake)
    assert result.answer == "1 + 2 = 3." and result.status == "completed"
    assert fake.paths == ["/v1/responses"] * 3
    assert fake.requests[2]["input"][-2:] == [
        {"type": "function_call", "call_id": "call_a", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "3.0"}]
    assert (result.usage.total.input_tokens, result.usage.total.output_tokens) == (26, 10)  # from the Responses shape


async def test_a_responses_model_that_refuses_tools_goes_on_as_plain_chat(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.push(400, error_body("registry.ollama.ai/library/qwen:0.5b does not support tools"))
        fake.reply(response_body("Three."))
        result, transcript = await run_calc(client, task_queue, fake)
    assert result.answer == "Three."
    assert ["tools" in r for r in fake.requests] == [True, False]
    assert any(m.kind == "notice" and "calc's tools were unavailable" in (m.content or "") for m in transcript)


async def test_a_bad_request_on_responses_fails_at_once_readably(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(400, "Invalid value for 'input'")
        with pytest.raises(WorkflowFailureError) as failed:
            await run_calc(client, task_queue, fake)
    assert failed.value.cause.message == (  # type: ignore[union-attr]
        "The model call for calc failed: The model endpoint rejected the request as invalid (HTTP 400). "
        "Server said: Invalid value for 'input'")
    assert len(fake.requests) == 1


def test_request_json_is_what_the_fake_received() -> None:
    assert json.loads(json.dumps(responses_input(VIEW))) == responses_input(VIEW)


def test_the_worker_can_put_every_team_that_names_no_api_on_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_teams.teams import TeamError

    assert faang.build().compile().spec.api is None
    monkeypatch.setenv("DURABLE_TEAMS_MODEL_API", "responses")  # as DURABLE_TEAMS_MODEL names the model
    assert faang.build().compile().spec.api == "responses"
    chat = faang.build()
    chat.api = "chat_completions"  # a team that names its API keeps it
    assert chat.compile().spec.api == "chat_completions"
    monkeypatch.setenv("DURABLE_TEAMS_MODEL_API", "responces")
    with pytest.raises(TeamError, match="DURABLE_TEAMS_MODEL_API must be responses or chat_completions, not 'responces'"):
        faang.build()
