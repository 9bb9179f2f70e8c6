"""The OpenAI-compatible endpoint, driven by the `openai` client itself: a thread continued
across requests, a question asked and answered as chat messages, streaming chunks."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.thread_marks import mark_line
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest

from .cli_process import cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def shop_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """Remembers the thread: counts the user's turns; asks for an order number when told
    "refund"; otherwise echoes."""
    last = messages[-1]
    users = [m["content"] for m in messages if m["role"] == "user"]
    if last["role"] == "tool":
        return say(f"Refund started for order {last['content']}.")
    if last["content"] == "refund":
        return call("ask_human", question="Which order?")
    return say(f"turn {len(users)}: you said {last['content']!r}; earlier: {users[:-1]}")


SHOP = Swarm([Agent("shop", "Help.", tools=["ask_human"])], name="shop").compile()


async def test_a_thread_continues_across_requests_of_the_openai_client(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), \
            running_gateway(client, task_queue, tokens=["s3cret"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="s3cret", max_retries=0)
        raw = await ai.chat.completions.with_raw_response.create(
            model="shop", messages=[{"role": "user", "content": "hello"}])
        first = raw.parse()
        thread = raw.headers["x-thread-id"]
        second = await ai.chat.completions.create(
            model="shop", messages=[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "..."},
                                    {"role": "user", "content": "again"}],
            extra_headers={"X-Thread-Id": thread})
        on_thread = {"X-Thread-Id": thread}
        asked = await ai.chat.completions.create(
            model="shop", user="end-user-7", messages=[{"role": "user", "content": "refund"}],
            extra_headers=on_thread)
        answered = await ai.chat.completions.create(
            model="shop", user="end-user-7", messages=[{"role": "user", "content": "A-17"}],
            extra_headers=on_thread)
        denied = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await denied.chat.completions.create(model="shop", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="belongs to team 'shop', not 'acme'"):
            await ai.chat.completions.create(model="acme", messages=[{"role": "user", "content": "x"}],
                                             extra_headers=on_thread)
        transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript)

    assert thread.startswith("shop-")
    assert first.choices[0].message.content == "turn 1: you said 'hello'; earlier: []" + mark_line(thread)
    assert first.choices[0].message.role == "assistant" and first.model == "shop"
    assert second.choices[0].message.content == "turn 2: you said 'again'; earlier: ['hello']"
    assert asked.choices[0].message.content == "[shop] Which order?"
    assert answered.choices[0].message.content == "Refund started for order A-17."
    assert [m.content for m in transcript if m.role == "user"] == ["hello", "again", "refund"]


async def test_streamed_chunks_in_openai_format(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        raw = await ai.chat.completions.with_raw_response.create(
            model="shop", stream=True, messages=[{"role": "user", "content": "hi"}])
        chunks = [chunk async for chunk in raw.parse()]
        again = await ai.chat.completions.create(
            model="shop", messages=[{"role": "user", "content": "more"}],
            extra_headers={"X-Thread-Id": raw.headers["x-thread-id"]})
        with pytest.raises(openai.BadRequestError, match="the last message must be the user's"):
            await ai.chat.completions.create(model="shop", messages=[{"role": "system", "content": "x"}])

    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "turn 1: you said 'hi'; earlier: []" + mark_line(raw.headers["x-thread-id"])
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    assert again.choices[0].message.content == "turn 2: you said 'more'; earlier: ['hi']"


async def test_the_teams_are_the_models_and_another_name_is_not_found(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, teams=["shop", "faang"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        assert [m.id for m in (await ai.models.list()).data] == ["shop", "faang"]
        with pytest.raises(openai.NotFoundError) as missing:
            await ai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert missing.value.code == "model_not_found"
        assert "no team 'gpt-4o' here (teams: shop, faang)" in str(missing.value)
        async with httpx.AsyncClient(base_url=url) as http:
            refused = await http.post("/threads", json={"team": "gpt-4o"})
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"


@pytest.mark.parametrize("command", [["worker"], ["serve"]])
async def test_a_team_module_that_does_not_load_is_one_line(client: Client, command: list[str]) -> None:
    outcome = await run_cli(*command, "--team", "no_such_module:TEAMS", env=cli_env(client))
    assert ("cannot load teams from 'no_such_module:TEAMS': No module named 'no_such_module' (looked for "
            "no_such_module.py or a no_such_module/ package in the working directory") in one_line_failure(outcome)
