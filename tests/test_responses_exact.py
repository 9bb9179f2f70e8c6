"""The Responses door exact to OpenAI's protocol (issue 49, item 7): one id per response (an
alias is a 404, so a deleted response is not readable, a step that never was is not
in_progress forever and cancelling it removes nothing), item ids unique across threads, every
object valid as the installed openai package's own types, the Agents SDK's way of going on
(`instructions` every turn, `result.to_input_list()` resent), OpenAI's error shapes, and an
unclear answer to an approval asked again in the conversation."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response as OpenAIResponse
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter
from temporalio.client import Client

from durable_teams.client.approvals import ASK_AGAIN
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses.events import (
    message_id,
    response_object,
    response_of_item,
)
from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse, View
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.messages import ModelRequest, ModelResponse, Usage
from durable_teams.workflows.state import TurnReply

from .conftest import running_worker, system_program_missing
from .gateway_helpers import running_gateway, sse_events

pytestmark = pytest.mark.workflow

REFUNDS: list[str] = []


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a person approves it first)."""
    REFUNDS.append(order)
    return "refunded"


def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        said = say("Refunded." if last["content"] == "refunded" else "No refund, then.")
    elif last["content"].startswith("refund"):
        said = call("refund", order="4711")
    else:
        said = say(f"You said: {last['content']}")
    return ModelResponse(message=said, usage=Usage(prompt_tokens=10, completion_tokens=2))


DESK = Swarm([Agent("desk", "Help.", tools=[refund])], name="desk").compile()
THREAD = "desk-resp-1"
REAL = ResponseRef(THREAD, 1, 0, 0).id
HEX = THREAD.encode().hex()


@pytest.mark.parametrize("alias", [
    f"resp_{HEX}_01_0_0", f"resp_{HEX}_1_00_0", f"resp_{HEX}_1_0_00", f"resp_{HEX}_+1_0_0",
    f"resp_{HEX}_１_0_0", f"resp_{HEX.upper()}_1_0_0", f"resp_{HEX}_1_0_0_", f"resp_{HEX}_1_0_0_0",
    f"resp_{HEX}_1_0", f"resp_{HEX} _1_0_0", f"resp_{HEX}_1_0_0 ",
])
def test_a_response_answers_to_one_id_only(alias: str) -> None:
    assert ResponseRef.parse(REAL) == ResponseRef(THREAD, 1, 0, 0)
    with pytest.raises(UnknownResponse):
        ResponseRef.parse(alias)


def test_item_ids_name_their_response_across_threads() -> None:
    ids = {message_id(ResponseRef(thread, 1, 0, 0)) for thread in ("desk-resp-1", "desk-resp-2")}
    assert len(ids) == 2
    ref = ResponseRef("desk-resp-2", 3, 7, 1)
    assert response_of_item(message_id(ref)) == ref
    assert response_of_item("msg_1_0_0") is None and response_of_item(5) is None


@pytest.mark.parametrize("extra, param", [
    ({"temperature": 2.5}, "temperature"), ({"temperature": -0.1}, "temperature"),
    ({"temperature": "hot"}, "temperature"), ({"top_p": 1.01}, "top_p"), ({"top_p": True}, "top_p"),
])
def test_sampling_out_of_range_is_refused_naming_the_field(extra: dict[str, Any], param: str) -> None:
    with pytest.raises(FieldError) as refused:
        fields.check({"model": "desk", "input": "hi", **extra})
    assert refused.value.param == param


def test_sampling_in_range_and_instructions_with_a_previous_response_are_taken() -> None:
    fields.check({"model": "desk", "input": "hi", "temperature": 2, "top_p": 0.5,
                  "instructions": "Help.", "previous_response_id": REAL})


@pytest.mark.parametrize("store", [True, False])
def test_every_object_is_valid_as_the_openai_package_types_it(store: bool) -> None:
    view = View(ResponseRef(THREAD, 1, 0, 0), status="completed", text="Hi.", end=2,
                reply=TurnReply(turn=1, text="Hi.", agent="desk"))
    for started in (True, False):
        raw = response_object(view, "desk", 1, started=started, store=store)
        parsed = OpenAIResponse.model_validate(raw)
        assert raw["store"] is store and parsed.usage is not None
        assert parsed.usage.input_tokens_details.cache_write_tokens == 0


def validated(answer: httpx.Response) -> OpenAIResponse:
    assert answer.status_code == 200, answer.text
    return OpenAIResponse.model_validate(answer.json())


async def post(http: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await http.post("/v1/responses", content=json.dumps({"model": "desk", **body}))


@pytest.mark.slow
async def test_ids_are_one_to_one_over_http(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Content-Type": "application/json"}) as http:
        first = validated(await post(http, input="refund please"))  # ends at the approval
        ref = ResponseRef.parse(first.id)
        step_k = ResponseRef(ref.thread, ref.turn, ref.start, 999).id
        hexed = ref.thread.encode().hex()
        aliases = [step_k, f"resp_{hexed}_0{ref.turn}_{ref.start}_0", ResponseRef(ref.thread, 1, 1, 0).id,
                   f"resp_{hexed}_{ref.turn}_{ref.start}_０"]
        for alias in aliases:
            assert (await http.get(f"/v1/responses/{alias}")).status_code == 404, alias
            assert (await http.get(f"/v1/responses/{alias}?stream=true")).status_code == 404, alias
            cancelled = await http.post(f"/v1/responses/{alias}/cancel", json={})
            assert cancelled.status_code == 404, (alias, cancelled.text)
            assert (await http.delete(f"/v1/responses/{alias}")).status_code == 404, alias
        async with http.stream("GET", f"/v1/responses/{first.id}?stream=true") as streamed:
            frames = [data async for _, data in sse_events(streamed)]
        as_events = TypeAdapter(ResponseStreamEvent)
        parsed = [as_events.validate_python(frame) for frame in frames]  # the openai package's own types
        assert parsed[-1].type == "response.completed" and frames[-1]["response"]["store"] is True
        # nothing was removed: the approval still waits and its answer goes on
        unclear = validated(await post(http, input="yes if it is under $20", previous_response_id=first.id))
        assert unclear.id == first.id and unclear.output_text.startswith(ASK_AGAIN) and REFUNDS == []
        answered = await post(http, input="yes", previous_response_id=first.id, instructions="Help.",
                              store=False)  # instructions every turn, as the Agents SDK sends them
        done = validated(answered)
        assert (done.output_text, answered.json()["store"], REFUNDS) == ("Refunded.", False, ["4711"])
        assert done.output[-1].id == message_id(ResponseRef.parse(done.id))
        # deleted: no alias reads it
        assert (await http.delete(f"/v1/responses/{done.id}")).status_code == 200
        gone = ResponseRef.parse(done.id)
        for alias in (done.id, f"resp_{hexed}_{gone.turn}_{gone.start}_0{gone.step}"):
            assert (await http.get(f"/v1/responses/{alias}")).status_code == 404
        unknown = await post(http, input="hi", previous_response_id=step_k)
        assert unknown.status_code == 404
        assert {k: unknown.json()["error"][k] for k in ("type", "param", "code")} == {
            "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}


@pytest.mark.slow
async def test_the_agents_sdk_goes_on_with_instructions_and_with_its_input_list(
        client: Client, task_queue: str) -> None:
    from agents import Agent as SDKAgent
    from agents import OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    async with running_worker(client, task_queue, [DESK], ScriptedModel(script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        model = OpenAIResponsesModel("desk", ai)
        told = SDKAgent(name="desk", instructions="Be brief.", model=model)
        first = await Runner.run(told, "hello")
        second = await Runner.run(told, "again", previous_response_id=first.last_response_id)
        assert (first.final_output, second.final_output) == ("You said: hello", "You said: again")
        assert second.last_response_id is not None and first.last_response_id is not None
        assert ResponseRef.parse(second.last_response_id).thread == ResponseRef.parse(first.last_response_id).thread
        # the whole list resent, without instructions: the same thread goes on
        plain = SDKAgent(name="desk", model=model)
        third = await Runner.run(plain, [*second.to_input_list(), {"role": "user", "content": "thanks"}])
        assert third.final_output == "You said: thanks" and third.last_response_id is not None
        assert ResponseRef.parse(third.last_response_id).thread == ResponseRef.parse(first.last_response_id).thread
        assert ResponseRef.parse(third.last_response_id).turn == 3


@pytest.mark.slow
async def test_the_codex_cli_is_asked_again_after_a_conditional_answer(client: Client, task_queue: str) -> None:
    """`codex exec`, then `codex exec resume --last` (the whole conversation resent, `store:
    false`): "yes if it is under $20" at the approval is asked again in the conversation, the
    plain yes after it approves, one refund, all on one thread."""
    codex = os.environ.get("DURABLE_TEAMS_CODEX") or shutil.which("codex")
    if codex is None:
        system_program_missing("codex not found (npm install -g @openai/codex, or DURABLE_TEAMS_CODEX=path)",
                               "DURABLE_TEAMS_REQUIRE_CODEX")
        return
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        with tempfile.TemporaryDirectory() as home:
            write_codex_config(home, url)
            said = []
            for prompt, resume in (("refund please", False), ("yes if it is under $20", True), ("yes", True)):
                answer = os.path.join(home, "answer.txt")
                args = ["exec", *(["resume", "--last"] if resume else []), "--skip-git-repo-check",
                        "--output-last-message", answer, prompt]
                run = await asyncio.create_subprocess_exec(
                    codex, *args, env={**os.environ, "CODEX_HOME": home}, cwd=home,
                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE)
                out, err = await asyncio.wait_for(run.communicate(), 120)
                assert run.returncode == 0, (out + err).decode()[-2000:]
                said.append(read_text(answer).strip())
    assert said[0].startswith("[desk] Approve refund(") and REFUNDS == ["4711"]
    assert said[1].startswith(ASK_AGAIN) and said[2] == "Refunded."


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
