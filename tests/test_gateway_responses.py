"""OpenAI's Responses API in front of a team (durable_teams/gateway/doors/responses/door.py), tried as its
clients use it: the openai client (plain, streamed, background), with `previous_response_id`
across a question and an approval (one refund), a stream resumed with `starting_after` on a
new gateway after the first one was stopped in the middle of it, and the OpenAI Agents SDK's
default Responses model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_teams.client.send import submit_turn
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.cancelling import CANCELLED, NOT_RUN
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, ModelResponse, Usage

from .cli_process import ROOT, cli_env
from .conftest import running_worker, system_program_missing
from .gateway_helpers import running_gateway, sse_events

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

REFUNDS: list[str] = []
GATE: dict[str, asyncio.Event] = {}


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a person approves it first)."""
    REFUNDS.append(order)
    return "refunded"


TOLD: list[str] = []
HEARD: dict[str, asyncio.Event] = {}


@tool
async def lookup(order: str) -> str:
    """Look an order up (waits for the test's gate; notes a cancellation)."""
    try:
        await GATE["lookup"].wait()
    except asyncio.CancelledError:
        TOLD.append(order)
        HEARD["lookup"].set()
        raise
    return f"order {order}: shipped"


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    return ModelResponse(message=desk_reply(messages), usage=Usage(prompt_tokens=100, completion_tokens=10))


def desk_reply(messages: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if last["role"] == "tool" and last["content"] == "refunded":
        return say("Your refund is on its way.")
    if last["role"] == "tool" and last["content"].startswith("order "):
        return say(f"Looked up: {last['content']}")
    if last["role"] == "tool" and "denied" in last["content"]:
        return say("No refund, then.")
    if last["role"] == "tool":
        return call("refund", order=last["content"].split()[-1])
    if last["content"].startswith("I want a refund"):
        return call("ask_human", question="What's your order number?")
    if last["content"].startswith("Where is"):
        return call("lookup", order="4711")
    return say(f"You said: {last['content']}")


DESK = Swarm([Agent("desk", "Help.", tools=["ask_human", refund, lookup])], name="desk").compile()
ASKED = "[desk] What's your order number?"
DONE = "Your refund is on its way."


async def test_three_turns_with_a_question_and_an_approval_one_refund(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=["t1"], teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t1", max_retries=0)
        first = await ai.responses.create(model="desk", input="I want a refund")
        assert (first.status, first.output_text) == ("completed", ASKED)
        # streamed: the question answered; the approval comes as an mcp_approval_request item
        events = [e async for e in await ai.responses.create(
            model="desk", input="Order 4711", previous_response_id=first.id, stream=True)]
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert events[0].type == "response.created" and events[-1].type == "response.completed"
        second = events[-1].response  # type: ignore[union-attr]
        approval = [item for item in second.output if item.type == "mcp_approval_request"]
        assert len(approval) == 1 and approval[0].name == "refund" and approval[0].server_label == "desk"
        assert approval[0].arguments == '{"order": "4711"}' and REFUNDS == []
        # an older response cannot be continued: 409 naming the latest
        with pytest.raises(openai.ConflictError) as conflict:
            await ai.responses.create(model="desk", input="again", previous_response_id=first.id)
        assert second.id in conflict.value.message
        third = await ai.responses.create(model="desk", previous_response_id=second.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": approval[0].id, "approve": True}])
        assert (third.status, third.output_text, REFUNDS) == ("completed", DONE, ["4711"])
        assert third.usage is not None and third.usage.total_tokens == 330  # the whole turn's 3 calls
        # the same request again is the same response: nothing runs twice
        again = await ai.responses.create(model="desk", previous_response_id=second.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": approval[0].id, "approve": True}])
        assert again.id == third.id and REFUNDS == ["4711"]
        got = await ai.responses.retrieve(first.id)
        assert (got.id, got.output_text, got.status) == (first.id, ASKED, "completed")
        items = await ai.responses.input_items.list(third.id)
        assert [(i.type, getattr(i, "approve", None)) for i in items.data] == [("mcp_approval_response", True)]
        # a plain next turn
        fourth = await ai.responses.create(model="desk", input="thanks", previous_response_id=third.id)
        # an Idempotency-Key stands for one request: sent again, the same response; with
        # another input, a 409
        keyed = await ai.responses.create(model="desk", input="hi", extra_headers={"Idempotency-Key": "k1"})
        assert (await ai.responses.create(model="desk", input="hi", extra_headers={"Idempotency-Key": "k1"})).id == keyed.id
        with pytest.raises(openai.ConflictError) as reused:
            await ai.responses.create(model="desk", input="hello", extra_headers={"Idempotency-Key": "k1"})
        assert reused.value.code == "idempotency_key_reused"
        async with httpx.AsyncClient() as http:  # the gateway's guards hold on the new routes
            assert (await http.get(f"{url}/v1/responses/{first.id}")).status_code == 401
            form = await http.post(f"{url}/v1/responses", content=b"model=desk",
                                   headers={"Authorization": "Bearer t1", "Content-Type": "text/plain"})
            assert form.status_code == 415
        assert fourth.output_text == "You said: thanks"
        assert ResponseRef.parse(fourth.id).thread == ResponseRef.parse(first.id).thread


async def test_fields_a_team_cannot_honour_are_refused_by_name(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        cases: list[tuple[dict[str, Any], str]] = [
            ({"tool_choice": "required"}, "tool_choice"),
            ({"temperature": 3}, "temperature"), ({"top_p": -1}, "top_p"),
            ({"top_logprobs": 2}, "top_logprobs"), ({"prompt": {"id": "p"}}, "prompt"),
            ({"metadata": {"a": "b"}}, "metadata"), ({"max_output_tokens": 0}, "max_output_tokens"),
            ({"conversation": "conv_1"}, "conversation"),
            ({"text": {"format": {"type": "json_object"}}}, "text"),
        ]
        for extra, param in cases:
            with pytest.raises(openai.BadRequestError) as refused:
                await ai.responses.create(model="desk", input="hi", **extra)
            assert refused.value.param == param, extra
        with pytest.raises(openai.NotFoundError):
            await ai.responses.retrieve("resp_zz_1_0_0")
        with pytest.raises(openai.NotFoundError):
            await ai.responses.create(model="nope", input="hi")


@asynccontextmanager
async def gateway_process(client: Client, task_queue: str) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """`durable-teams serve` in its own process (its URL, and the process to kill); ended after."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", "serve", "--port", str(port), "--task-queue", task_queue,
        "--team", "tests.test_gateway_responses:DESK", cwd=ROOT, env=cli_env(client),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(600):  # ready within 60 s, or fail clearly
                if proc.returncode is not None:
                    raise AssertionError(f"serve exited: {(await proc.stderr.read()).decode()[-2000:]}")  # type: ignore[union-attr]
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"{url}/healthz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("serve did not answer /healthz within 60 s")
        yield url, proc
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_background_stream_resumes_after_the_gateway_is_killed_every_event_once(
        client: Client, task_queue: str) -> None:
    GATE["lookup"], HEARD["lookup"] = asyncio.Event(), asyncio.Event()
    first_part: list[dict[str, Any]] = []
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        async with gateway_process(client, task_queue) as (url, gateway):
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            started = await ai.responses.create(model="desk", input="Where is my order?", background=True)
            assert started.status == "in_progress" and started.background
            with pytest.raises(httpx.TransportError):  # the stream is cut by the kill
                async with httpx.AsyncClient(timeout=30) as http, http.stream(
                        "GET", f"{url}/v1/responses/{started.id}", params={"stream": "true"}) as stream:
                    async for _, event in sse_events(stream):
                        first_part.append(event)
                        if event["type"] == "response.output_item.done":  # the lookup step: kill
                            gateway.kill()
        # another gateway process, started after: it knows nothing but what the workflow holds
        async with gateway_process(client, task_queue) as (url, _):
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            polled = await ai.responses.retrieve(started.id)
            assert polled.status == "in_progress"
            last = first_part[-1]["sequence_number"]
            resumed = await ai.responses.retrieve(started.id, stream=True, starting_after=last)
            GATE["lookup"].set()
            rest = [e.model_dump() async for e in resumed]
            whole = [e.model_dump() async for e in await ai.responses.retrieve(started.id, stream=True)]
            done = await ai.responses.retrieve(started.id)
    numbers = [e["sequence_number"] for e in first_part + rest]
    assert numbers == list(range(len(numbers)))  # every event once, in order
    assert [e["type"] for e in first_part + rest] == [e["type"] for e in whole]
    assert rest[-1]["type"] == "response.completed"
    assert done.output_text == "Looked up: order 4711: shipped"
    assert [i.type for i in done.output] == ["reasoning", "message"]


async def test_the_agents_sdk_responses_model_takes_the_approval_one_refund(client: Client, task_queue: str) -> None:
    from agents import Agent as SDKAgent
    from agents import HostedMCPTool, OpenAIResponsesModel, Runner, set_tracing_disabled
    from agents.items import MCPApprovalRequestItem
    from agents.tool import MCPToolApprovalFunctionResult, MCPToolApprovalRequest

    set_tracing_disabled(True)
    REFUNDS.clear()
    asked: list[str] = []

    def approve(request: MCPToolApprovalRequest) -> MCPToolApprovalFunctionResult:
        asked.append(request.data.name)
        return {"approve": True}

    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        team = SDKAgent(name="desk", model=OpenAIResponsesModel("desk", ai), tools=[HostedMCPTool(
            tool_config={"type": "mcp", "server_label": "desk", "server_url": "https://unused.invalid",
                         "require_approval": "always"},
            on_approval_request=approve)])
        first = await Runner.run(team, "I want a refund")
        second = await Runner.run(team, "Order 4711", previous_response_id=first.last_response_id,
                                  auto_previous_response_id=True)
    assert first.final_output == ASKED
    assert second.final_output == DONE
    assert asked == ["refund"] and REFUNDS == ["4711"]
    assert any(isinstance(item, MCPApprovalRequestItem) for item in second.new_items)


async def test_the_codex_cli_gets_a_plain_question_answered(client: Client, task_queue: str) -> None:
    """`codex exec` with the gateway as a custom model provider on the Responses wire API: it
    resends the whole conversation (its instructions as developer messages, its own tools,
    `store: false`), which opens a thread whose turn is the user's prompt."""
    codex = os.environ.get("DURABLE_TEAMS_CODEX") or shutil.which("codex")
    if codex is None:
        system_program_missing("codex not found (npm install -g @openai/codex, or DURABLE_TEAMS_CODEX=path)",
                               "DURABLE_TEAMS_REQUIRE_CODEX")
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        with tempfile.TemporaryDirectory() as home:
            write_codex_config(home, url)
            answer = os.path.join(home, "answer.txt")
            run = await asyncio.create_subprocess_exec(
                codex, "exec", "--skip-git-repo-check", "--output-last-message", answer, "Hello, team",
                env={**os.environ, "CODEX_HOME": home}, cwd=home, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(run.communicate(), 120)
            assert run.returncode == 0, (out + err).decode()[-2000:]
            assert read_text(answer).strip() == "You said: Hello, team"


def write_codex_config(home: str, url: str) -> None:
    """The gateway as Codex's model provider, on the Responses wire API, retries off."""
    Path(home, "config.toml").write_text(f'''model = "desk"
model_provider = "team"
[model_providers.team]
name = "durable team"
base_url = "{url}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
''')


def read_text(path: str) -> str:
    return Path(path).read_text()


async def test_cancel_stops_the_turn_tells_the_tool_and_the_thread_goes_on(client: Client, task_queue: str) -> None:
    GATE["lookup"], HEARD["lookup"] = asyncio.Event(), asyncio.Event()
    TOLD.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        started = await ai.responses.create(model="desk", input="Where is my order?", background=True)
        async for event in await ai.responses.retrieve(started.id, stream=True):
            if event.type == "response.output_item.done":  # the lookup runs now
                break
        cancelled = await ai.responses.cancel(started.id)
        again = await ai.responses.cancel(started.id)
        events = [e async for e in await ai.responses.retrieve(started.id, stream=True)]
        following = await ai.responses.create(model="desk", input="thanks", previous_response_id=started.id)
        with pytest.raises(openai.ConflictError):  # a response that ended is not cancelled
            await ai.responses.cancel(following.id)
        # the tool hears of it on its next heartbeat (within the worker's throttle)
        await asyncio.wait_for(HEARD["lookup"].wait(), 30)
        await assert_replays(client.get_workflow_handle(ResponseRef.parse(started.id).thread))
    assert (cancelled.status, again.status) == ("cancelled", "cancelled")
    assert events[-1].type == "response.failed" and events[-1].response.status == "cancelled"  # type: ignore[union-attr]
    assert following.output_text == "You said: thanks"
    assert TOLD == ["4711"]


async def test_cancel_turn_withdraws_a_waiting_approval_and_answers_its_open_calls(client: Client, task_queue: str) -> None:
    """The workflow's own cancellation while a turn waits for a person: the question goes, the
    tool call waiting for approval is answered "Not run", the refund never runs, and the next
    turn's model call sees a well-formed conversation."""
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        first = await ai.responses.create(model="desk", input="I want a refund")
        second = await ai.responses.create(model="desk", input="Order 4711", previous_response_id=first.id)
        call_id = next(i.id for i in second.output if i.type == "mcp_approval_request").removeprefix("mcpr_")
        handle = client.get_workflow_handle(ResponseRef.parse(first.id).thread)
        assert await handle.execute_update(TeamWorkflow.cancel_turn, 1) == 1
        replies = await handle.query(TeamWorkflow.turn_replies, [1])
        status = await handle.query(TeamWorkflow.status)
        log = await handle.query(TeamWorkflow.transcript, True)
        with pytest.raises(openai.ConflictError) as gone:  # the approval went with its turn
            await ai.responses.create(model="desk", previous_response_id=second.id, input=[
                {"type": "mcp_approval_response", "approval_request_id": f"mcpr_{call_id}", "approve": True}])
        latest = gone.value.body["latest_response_id"]  # type: ignore[index]
        ended = await ai.responses.retrieve(latest)
        nxt = await ai.responses.create(model="desk", input="hello", previous_response_id=latest)
        await assert_replays(handle)
    assert [r.status for r in replies] == ["cancelled"] and status.pending == []
    answers = [m for m in log if m.role == "tool" and m.tool_call_id == call_id]
    assert [m.content for m in answers] == [NOT_RUN]
    assert REFUNDS == [] and nxt.output_text == "You said: hello"
    assert (ended.status, ended.output_text) == ("cancelled", CANCELLED)


async def assert_replays(handle: WorkflowHandle[Any, Any]) -> None:
    """The conversation's history replays with this code (a cancelled turn is deterministic)."""
    history = await handle.fetch_history()
    replayed = await Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter).replay_workflow(
        history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None


WRITER = Swarm([Agent("writer", "Write.", model="test-model")], name="writer").compile()


async def test_a_failed_turn_is_a_failed_response_with_the_reason(client: Client, task_queue: str) -> None:
    from durable_teams.activities.model import OpenAIBackend

    from .fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.error(401, "Incorrect API key provided")
        async with running_worker(client, task_queue, [WRITER], OpenAIBackend(base_url=fake.base_url, api_key="k")), \
                running_gateway(client, task_queue, teams=["writer"]) as url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            failed = await ai.responses.create(model="writer", input="hi")
            events = [e async for e in await ai.responses.retrieve(failed.id, stream=True)]
    assert failed.status == "failed" and failed.error is not None and failed.output == []
    assert "The model call for writer failed" in failed.error.message and "401" in failed.error.message
    assert events[-1].type == "response.failed"


async def test_a_queued_turn_cancelled_never_runs(client: Client, task_queue: str) -> None:
    GATE["lookup"], HEARD["lookup"] = asyncio.Event(), asyncio.Event()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        started = await ai.responses.create(model="desk", input="Where is my order?", background=True)
        thread = ResponseRef.parse(started.id).thread
        queued = await submit_turn(client, thread, "hello")  # behind the running turn (native path)
        handle = client.get_workflow_handle(thread)
        assert await handle.execute_update(TeamWorkflow.cancel_turn, queued.number) == queued.number
        second = await queued.reply()
        GATE["lookup"].set()
        async for _ in await ai.responses.retrieve(started.id, stream=True):  # until it ends
            pass
        first = await ai.responses.retrieve(started.id)
        log = await handle.query(TeamWorkflow.transcript, True)
    assert (second.status, first.status, first.output_text) == ("cancelled", "completed", "Looked up: order 4711: shipped")
    assert "hello" not in [m.content for m in log if m.role == "user"]


async def test_bad_requests_are_4xx_json_never_a_500(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK, WRITER], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk", "writer"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        desk = await ai.responses.create(model="desk", input="hello")
        nowhere = ResponseRef("desk-resp-nowhere", 1, 0).id
        posts: list[tuple[Any, int]] = [
            ([], 400), ({"model": 5, "input": "hi"}, 400), ({"model": "desk"}, 400),
            ({"model": "desk", "input": 5}, 400), ({"model": "desk", "input": []}, 400),
            ({"model": "desk", "input": [1]}, 400), ({"model": "desk", "input": [{"type": {}}]}, 400),
            ({"model": "desk", "input": [1], "instructions": "x"}, 400),
            ({"model": "desk", "input": [{"role": "user", "content": [{"type": "input_image"}]}]}, 400),
            ({"model": "desk", "input": [{"type": "mcp_approval_response", "approval_request_id": "m",
                                          "approve": "yes"}], "previous_response_id": desk.id}, 400),
            ({"model": "desk", "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, 400),
            ({"model": "desk", "input": "\ud800"}, 400), ({"model": "desk", "input": "x" * 300_000}, 413),
            ({"model": "desk", "input": "hi", "stream": "yes"}, 400),
            ({"model": "desk", "input": "hi", "previous_response_id": 5}, 404),
            ({"model": "desk", "input": "hi", "previous_response_id": nowhere}, 404),
            ({"model": "writer", "input": "hi", "previous_response_id": desk.id}, 400),
            ({"model": "desk", "input": [{"type": "mcp_approval_response", "approval_request_id": "m",
                                          "approve": True}], "previous_response_id": desk.id}, 400),
        ]
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for body, status in posts:
                answer = await http.post("/v1/responses", content=json.dumps(body),  # \ud800 escaped
                                         headers={"Content-Type": "application/json"})
                assert (answer.status_code, answer.json()["error"]["message"] != "") == (status, True), (body, answer.text)
            thread = ResponseRef.parse(desk.id).thread
            gets = [(f"/v1/responses/{nowhere}", 404), ("/v1/responses/resp_x", 404),
                    (f"/v1/responses/{ResponseRef(thread, 9, 0).id}?stream=true", 404),  # no such turn yet
                    (f"/v1/responses/{ResponseRef(thread, 0, 0).id}", 404),
                    (f"/v1/responses/{ResponseRef(thread, 1, 999).id}", 404),
                    (f"/v1/responses/{desk.id}?stream=true&starting_after=-1", 400),
                    (f"/v1/responses/{nowhere}?stream=true", 404), (f"/v1/responses/{nowhere}/input_items", 404)]
            for path, status in gets:
                answer = await http.get(path)
                assert (answer.status_code, "error" in answer.json()) == (status, True), (path, answer.text)
            assert (await http.post(f"/v1/responses/{nowhere}/cancel", json={})).status_code == 404
            for gone in (nowhere, ResponseRef(thread, 9, 0).id, ResponseRef(thread, 1, 999).id, "resp_x"):
                assert (await http.delete(f"/v1/responses/{gone}")).status_code == 404, gone
