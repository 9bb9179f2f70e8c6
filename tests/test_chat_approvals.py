"""Approvals answered in words on the chat path and the native endpoint: only a plain yes runs
the tool; a conditional, questioning or hesitant answer is asked again in the same thread (with
or without `X-Thread-Id`) and the next clear answer is taken; a "yes" that answered a plain
question before still answers the approval after it."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.client.approvals import ask_again
from durable_teams.gateway.core.thread_marks import mark_line
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway, say_on
from .teams import AGAIN, APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, UNCLEAR, desk_script

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_yes_to_a_question_then_yes_to_the_approval_approves(client: Client, task_queue: str,
                                                                   stream: bool) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-yes-{uuid.uuid4().hex[:8]}"
        said = [await say_on(http, thread, text, stream) for text in (FIRST, "yes", "yes")]
    assert said == [ASKED, APPROVAL.replace("4711", "yes"), DONE]
    assert REFUNDS == ["yes"]


async def test_unclear_answers_on_a_named_thread_are_asked_again_and_the_next_clear_one_taken(
        client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        approved, denied = (f"desk-{word}-{uuid.uuid4().hex[:8]}" for word in ("approved", "denied"))
        first = [await say_on(http, approved, text) for text in (FIRST, "Order 4711", *UNCLEAR, "Yes.")]
        second = [await say_on(http, denied, text) for text in (FIRST, "Order 4711", *UNCLEAR[:2], "No.")]
        transcript = await client.get_workflow_handle(approved).query(TeamWorkflow.transcript)
    assert first == [ASKED, APPROVAL, *[AGAIN] * len(UNCLEAR), DONE]
    assert second[:4] == [ASKED, APPROVAL, AGAIN, AGAIN] and second[4] != DONE
    assert REFUNDS == ["4711"]
    assert not any(m.content in UNCLEAR for m in transcript)  # an unclear answer never reached the team


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_chat_resending_its_history_stays_in_its_thread_after_an_unclear_answer(
        client: Client, task_queue: str, stream: bool) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        history: list[dict[str, str]] = []
        answers, threads = [], []
        for text in (FIRST, "Order 4711", UNCLEAR[0], UNCLEAR[1], "Yes.", FIRST, "yes", "yes"):
            history.append({"role": "user", "content": text})
            raw = await ai.chat.completions.with_raw_response.create(  # type: ignore[call-overload]
                model="desk", messages=history, stream=stream)
            threads.append(raw.headers["x-thread-id"])
            if stream:
                answer = "".join([c.choices[0].delta.content or "" async for c in raw.parse() if c.choices])
            else:
                answer = raw.parse().choices[0].message.content or ""
            answers.append(answer)
            history.append({"role": "assistant", "content": answer})
        await client.get_workflow_handle(threads[0]).terminate("test over")
    # then a "yes" to a plain question and a "yes" to the approval after it, in the same chat
    assert answers == [ASKED + mark_line(threads[0]), APPROVAL, AGAIN, AGAIN, DONE, ASKED,
                       APPROVAL.replace("4711", "yes"), DONE]
    assert len(set(threads)) == 1, threads
    assert REFUNDS == ["4711", "yes"]


async def test_the_native_answer_endpoint_reads_words_as_the_chat_does(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-native-{uuid.uuid4().hex[:8]}"
        assert [await say_on(http, thread, text) for text in (FIRST, "Order 4711")] == [ASKED, APPROVAL]
        qid = (await http.get(f"/threads/{thread}")).json()["pending"][0]["question_id"]
        unclear: list[Any] = [await http.post(f"/threads/{thread}/questions/{qid}", json={"text": text})
                              for text in UNCLEAR]
        still = (await http.get(f"/threads/{thread}")).json()["pending"]
        key = {"Idempotency-Key": "answer-1"}
        yes = await http.post(f"/threads/{thread}/questions/{qid}", json={"text": "yes please"}, headers=key)
        again = await http.post(f"/threads/{thread}/questions/{qid}", json={"text": "yes please"}, headers=key)
        other = await http.post(f"/threads/{thread}/questions/{qid}", json={"approved": False}, headers=key)
        unkeyed = await http.post(f"/threads/{thread}/questions/{qid}", json={"approved": True})
        done = await say_on(http, thread, "and now?")
    assert [r.status_code for r in unclear] == [400] * len(UNCLEAR)
    assert unclear[0].json()["error"]["message"].startswith(ask_again("refund"))
    assert [q["question_id"] for q in still] == [qid]
    assert yes.status_code == 200 and REFUNDS == ["4711"]
    assert again.status_code == 200 and again.json() == yes.json()  # a retry: the first outcome
    assert other.status_code == 409 and other.json()["error"]["type"] == "idempotency_key_reused"
    assert unkeyed.status_code == 409  # answered already
    assert done.startswith("I saw")
