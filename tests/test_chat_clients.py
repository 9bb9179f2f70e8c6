"""Chat clients that resend the whole conversation and name no thread (the openai client as
most code uses it, LangChain's `ChatOpenAI`): each keeps its thread, a question and an approval
are answered by the next message, and a refund runs exactly once; a pasted conversation opens a
new thread with the earlier messages as context; a chat's thread closes when its chat goes
quiet and its questions stay out of the inbox."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from temporalio.client import Client, WorkflowExecutionStatus

from durable_teams.activities.model import OpenAIBackend
from durable_teams.gateway.core import resent_history as chat_history
from durable_teams.gateway.core import resent_threads as chat_threads
from durable_teams.gateway.core.thread_marks import mark_line, without_marks
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationResult

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .gateway_helpers import inbox_questions, running_gateway
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def openai_turns(ai: openai.AsyncOpenAI, stream: bool) -> tuple[list[str], list[str], list[Any]]:
    """The three-message conversation as a chat UI sends it: the history each time, no thread.
    Returns the answers, the thread of each, and the usage each reported."""
    history: list[dict[str, str]] = []
    answers, threads, usages = [], [], []
    for text in (FIRST, "Order 4711", "Yes, please go ahead."):
        history.append({"role": "user", "content": text})
        raw = await ai.chat.completions.with_raw_response.create(  # type: ignore[call-overload]
            model="desk", messages=history, stream=stream,
            **({"stream_options": {"include_usage": True}} if stream else {}))
        threads.append(raw.headers["x-thread-id"])
        if stream:
            chunks = [c async for c in raw.parse()]
            answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            usages.append(chunks[-1].usage)
        else:
            answer = raw.parse().choices[0].message.content or ""
            usages.append(raw.parse().usage)
        answers.append(answer)
        history.append({"role": "assistant", "content": answer})
    return answers, threads, usages


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_the_openai_client_keeps_its_thread_without_a_header(client: Client, task_queue: str,
                                                                  stream: bool) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=["t1"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t1", max_retries=0)
        answers, threads, usages = await openai_turns(ai, stream)
        transcript = await client.get_workflow_handle(threads[0]).query(TeamWorkflow.transcript)
        turn = (await client.get_workflow_handle(threads[0]).query(TeamWorkflow.status)).last_reply

    assert answers == [ASKED + mark_line(threads[0]), APPROVAL, DONE]  # the first carries the mark
    assert len(set(threads)) == 1 and threads[0].startswith("desk-chat-")
    assert REFUNDS == ["4711"]
    assert [m.content for m in transcript if m.role == "user"] == [FIRST]
    # a question's exchange reports no tokens (its turn goes on); the last, the whole turn's
    assert [u.total_tokens for u in usages[:2]] == [0, 0]
    assert turn is not None and turn.usage is not None and turn.usage.model_calls == 3
    assert (usages[2].prompt_tokens, usages[2].completion_tokens) == (turn.usage.input_tokens, turn.usage.output_tokens)
    assert usages[2].total_tokens == 330


async def test_langchain_chat_openai_keeps_its_thread(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        llm = ChatOpenAI(base_url=f"{url}/v1", api_key="unused", model="desk", max_retries=0)  # type: ignore[arg-type]
        history: list[BaseMessage] = []
        answers = []
        first = f"{FIRST} (LangChain)"  # its own first message: its own family of threads
        for i, text in enumerate((first, "Order 4711", "yes")):
            history.append(HumanMessage(text))
            if i == 1:  # streamed, as LangChain's astream sends it
                answer = "".join([str(chunk.content) async for chunk in llm.astream(history)])
            else:
                answer = str((await llm.ainvoke(history)).content)
            answers.append(answer)
            history.append(AIMessage(answer))
        family = chat_history.family(chat_history.ChatKey("", "desk"), first)
        threads = [wf.id async for wf in client.list_workflows(f'WorkflowId STARTS_WITH "{family}"')]

    assert [without_marks(a) for a in answers] == [ASKED, APPROVAL, DONE]
    assert REFUNDS == ["4711"]
    assert len(threads) == 1


async def test_a_pasted_conversation_opens_a_thread_that_sees_it(client: Client, task_queue: str) -> None:
    pasted = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"},
              {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "what now"}]
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        raw = await ai.chat.completions.with_raw_response.create(model="desk", messages=pasted)  # type: ignore[arg-type]
        thread = raw.headers["x-thread-id"]
        again = await ai.chat.completions.with_raw_response.create(
            model="desk", messages=[*pasted, {"role": "assistant", "content": raw.parse().choices[0].message.content},
                                    {"role": "user", "content": "thanks"}])  # type: ignore[arg-type]
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)

    assert without_marks(raw.parse().choices[0].message.content or "") == (
        "I saw ['system:Help.', 'system:Be brief.', 'user:hello', 'assistant:Hi! How can I help?', 'user:what now']")
    assert again.headers["x-thread-id"] == thread
    assert status.turns == 2


async def test_another_token_never_continues_a_thread(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=["alice", "mallory"]) as url:
        alice = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="alice", max_retries=0)
        mallory = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="mallory", max_retries=0)
        first = await alice.chat.completions.with_raw_response.create(
            model="desk", messages=[{"role": "user", "content": "hi"}])
        said = first.parse().choices[0].message.content
        resent = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": said},
                  {"role": "user", "content": "who am I"}]
        theirs = await mallory.chat.completions.with_raw_response.create(model="desk", messages=resent)  # type: ignore[arg-type]
        mine = await alice.chat.completions.with_raw_response.create(model="desk", messages=resent)  # type: ignore[arg-type]

    assert mine.headers["x-thread-id"] == first.headers["x-thread-id"]
    assert theirs.headers["x-thread-id"] != first.headers["x-thread-id"]


async def test_a_quiet_chat_closes_and_its_question_stays_out_of_the_inbox(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, chat_idle_seconds=2.0) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            asked = await http.post("/v1/chat/completions", json={
                "model": "desk", "messages": [{"role": "user", "content": FIRST}]})
            named = await http.post("/v1/chat/completions", headers={"X-Thread-Id": "desk-named-1"}, json={
                "model": "desk", "messages": [{"role": "user", "content": FIRST}]})
            await inbox_questions(http, "desk-named-1")  # both asked now: once the inbox lists it
            inbox = {q["thread_id"] for q in (await http.get("/questions")).json()}
        listed = await run_cli("pending", env=cli_env(client), timeout=60)
        handle = client.get_workflow_handle(asked.headers["x-thread-id"])
        result = await asyncio.wait_for(handle.result(), 60)  # the question lapses, then the thread closes
        result = ConversationResult.model_validate(result)
        described = await handle.describe()

    assert without_marks(asked.json()["choices"][0]["message"]["content"]) == ASKED
    assert named.json()["choices"][0]["message"]["content"] == ASKED
    assert "desk-named-1" in inbox and asked.headers["x-thread-id"] not in inbox
    assert "desk-named-1" in listed.out and asked.headers["x-thread-id"] not in listed.out  # `durable-teams pending`
    assert described.status == WorkflowExecutionStatus.COMPLETED
    assert (result.status, result.answer) == ("completed", "I'll wait for your order number.")


CAPPED = Swarm([Agent("writer", "Write.", model="test-model")], name="writer").compile()


async def test_max_tokens_reaches_every_model_call_and_a_cut_answer_says_length(client: Client, task_queue: str) -> None:
    from .fake_openai import FakeOpenAI, completion

    with FakeOpenAI() as fake:
        fake.reply(completion("A long story that was cu", finish_reason="length"))
        fake.reply(completion("Short."))
        backend = OpenAIBackend(base_url=fake.base_url, api_key="k")
        async with running_worker(client, task_queue, [CAPPED], backend), \
                running_gateway(client, task_queue) as url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            cut = await ai.chat.completions.create(model="writer", max_tokens=5,
                                                   messages=[{"role": "user", "content": "a story"}])
            whole = await ai.chat.completions.create(model="writer", max_completion_tokens=7,
                                                     messages=[{"role": "user", "content": "a word"}])
            with pytest.raises(openai.BadRequestError) as refused:
                await ai.chat.completions.create(model="writer", stop=["\n"],
                                                 messages=[{"role": "user", "content": "x"}])
            with pytest.raises(openai.BadRequestError) as zero:
                await ai.chat.completions.create(model="writer", max_tokens=0,
                                                 messages=[{"role": "user", "content": "x"}])

    assert [r.get("max_tokens") for r in fake.requests] == [5, 7]
    assert (cut.choices[0].finish_reason, without_marks(cut.choices[0].message.content or "")) == ("length", "A long story that was cu")
    assert (whole.choices[0].finish_reason, without_marks(whole.choices[0].message.content or "")) == ("stop", "Short.")
    assert refused.value.body["param"] == "stop"  # type: ignore[index]
    assert zero.value.body["param"] == "max_tokens"  # type: ignore[index]
    assert zero.value.body["message"] == "'max_tokens' must be an integer from 1 to 1000000"  # type: ignore[index]
    assert len(fake.requests) == 2  # neither refused request reached a model


def test_an_unset_token_cap_leaves_the_wire_as_older_workers_read_it() -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter

    from durable_teams.workflows.state import UserTurn

    plain, capped = pydantic_data_converter.payload_converter.to_payloads(
        [UserTurn(text="x", turn_id="t"), UserTurn(text="x", turn_id="t", max_tokens=3)])
    assert plain.data == b'{"text":"x","sender":null,"turn_id":"t"}'
    assert capped.data == b'{"text":"x","sender":null,"max_tokens":3,"turn_id":"t"}'


async def test_a_failed_turn_is_an_error_and_a_question_logs_no_traceback(
        client: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    import gc
    import logging

    from .fake_openai import FakeOpenAI

    caplog.set_level(logging.INFO)
    with FakeOpenAI() as fake:
        fake.error(401, "Incorrect API key provided")
        backend = OpenAIBackend(base_url=fake.base_url, api_key="k")
        async with running_worker(client, task_queue, [CAPPED], backend), \
                running_worker(client, f"{task_queue}-desk", [DESK], ScriptedModel(desk_script)), \
                running_gateway(client, task_queue) as url, \
                running_gateway(client, f"{task_queue}-desk") as desk_url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            with pytest.raises(openai.APIStatusError) as failed:
                await ai.chat.completions.create(model="writer", messages=[{"role": "user", "content": "hi"}])
            desk = openai.AsyncOpenAI(base_url=f"{desk_url}/v1", api_key="unused", max_retries=0)
            asked = await desk.chat.completions.create(model="desk", messages=[{"role": "user", "content": FIRST}])
            gc.collect()  # an unread task's exception is logged when the task is collected

    assert failed.value.status_code == 502
    assert failed.value.body["type"] == "turn_failed"  # type: ignore[index]
    assert "The model call for writer failed" in failed.value.message and "401" in failed.value.message
    assert without_marks(asked.choices[0].message.content or "") == ASKED
    gateway_logs = [r for r in caplog.records if r.name.startswith(("durable_teams.gateway", "asyncio", "uvicorn"))]
    assert not [r for r in gateway_logs if r.exc_info or "never retrieved" in r.getMessage()]


async def test_a_visibility_store_without_prefix_search_opens_a_new_thread(caplog: pytest.LogCaptureFixture) -> None:
    """A cluster whose visibility store cannot search by id prefix (standard visibility) loses
    chat continuity, never the request: the history opens a new thread."""
    from types import SimpleNamespace

    from temporalio.service import RPCError, RPCStatusCode

    def refuse(query: str, limit: int) -> Any:
        raise RPCError("operator STARTS_WITH not allowed", RPCStatusCode.INVALID_ARGUMENT, b"")

    gw = SimpleNamespace(client=SimpleNamespace(list_workflows=refuse), busy_seconds=1.0)
    history = chat_history.chat_history([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                                         {"role": "user", "content": "again"}])
    assert await chat_threads.find_thread(gw, chat_history.ChatKey("", "desk"), history) is None  # type: ignore[arg-type]
    assert "cannot look up chat threads (operator STARTS_WITH not allowed)" in caplog.text
