"""Each request gets its own outcome: the answer to an approval is answered with the turn it
answered, never with a turn sent after it (which may have failed, or said something else)."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.threads import Gateway
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import keyed_turn, running_gateway, say_on
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script
from .waiting import until

pytestmark = pytest.mark.workflow


@pytest.mark.slow  # over a second: out of the quick loop
async def test_the_approver_gets_the_turn_it_answered_not_a_later_one(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-own-{uuid.uuid4().hex[:8]}"
        assert [await say_on(http, thread, t) for t in (FIRST, "Order 4711")] == [ASKED, APPROVAL]
        gw = Gateway(client, task_queue, poll_seconds=0.05)
        approver = await gw.begin_exchange(thread, "yes", "input-yes")  # answered; outcome not read yet
        later = await gw.converse(thread, "and another thing", "input-later")  # the next turn, done
        approved = await approver()  # read only now, after the later turn's reply

        # the same over HTTP, the next message sent as soon as the answer is taken
        other = f"desk-own-http-{uuid.uuid4().hex[:8]}"
        assert [await say_on(http, other, t) for t in (FIRST, "Order 4712")] == [ASKED, APPROVAL.replace("4711", "4712")]
        yes = asyncio.ensure_future(say_on(http, other, "yes"))

        async def answer_taken() -> bool:
            return not (await client.get_workflow_handle(other).query(TeamWorkflow.status)).pending
        await until(answer_taken, "the answer taken")
        next_one = await say_on(http, other, "and another thing")
        approved_over_http = await yes
    assert (approved.kind, approved.text) == ("reply", DONE)
    assert later.text.startswith("I saw") and next_one.startswith("I saw")
    assert approved_over_http == DONE
    assert REFUNDS == ["4711", "4712"]


async def keyed_say(http: httpx.AsyncClient, thread: str, text: str, key: str) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread, "Idempotency-Key": key},
                           json={"model": "desk", "messages": [{"role": "user", "content": text}]})


def content(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


async def test_an_idempotency_key_stands_for_one_chat_request_however_late(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-keyed-{uuid.uuid4().hex[:8]}"
        asked = content(await keyed_say(http, thread, FIRST, "k1"))
        other_text = await keyed_say(http, thread, "something else", "k1")
        asked_again = content(await keyed_say(http, thread, FIRST, "k1"))  # a retry: the first outcome
        approval = content(await keyed_say(http, thread, "Order 4711", "k2"))
        done = content(await keyed_say(http, thread, "yes", "k3"))
        late_order = content(await keyed_say(http, thread, "Order 4711", "k2"))  # the turn it was part of
        second = [content(await keyed_say(http, thread, text, key)) for text, key in
                  ((FIRST, "k4"), ("Order 5", "k5"))]
        late_yes = content(await keyed_say(http, thread, "yes", "k3"))  # must not approve refund 5
        late_yes_other = await keyed_say(http, thread, "no", "k3")
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.ConflictError) as by_client:
            await ai.chat.completions.create(model="desk", messages=[{"role": "user", "content": "other"}],
                                             extra_headers={"X-Thread-Id": thread, "Idempotency-Key": "k5"})
        denied = content(await keyed_say(http, thread, "no", "k6"))
    assert (asked, asked_again, approval, done) == (ASKED, ASKED, APPROVAL, DONE)
    assert other_text.status_code == 409 and other_text.json()["error"]["type"] == "idempotency_key_reused"
    assert late_order == DONE
    assert second == [ASKED, APPROVAL.replace("4711", "5")]
    assert late_yes == DONE and late_yes_other.status_code == 409
    assert [q.kind for q in status.pending] == ["approval"] and status.turns == 2
    assert by_client.value.status_code == 409
    assert denied != DONE and REFUNDS == ["4711"]


async def test_a_retried_turn_streams_its_waiting_question_again_and_other_text_is_a_409(
        client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]

        first = await keyed_turn(http, thread, FIRST, "t1")
        retried = await keyed_turn(http, thread, FIRST, "t1")
        other = await keyed_turn(http, thread, "other text", "t1")
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
        await client.get_workflow_handle(thread).terminate("test over")
    kinds = [e["type"] for e in first[1]]
    assert first[0] == 200 and kinds[0] == "user_message" and kinds[-1] == "question"
    assert retried[0] == 200 and [e["type"] for e in retried[1]] == kinds  # the same events again
    assert other[0] == 409 and other[1][0]["error"]["type"] == "idempotency_key_reused"
    assert status.turns == 1


async def test_a_stream_the_client_leaves_after_its_first_chunk_left_its_turn_in_the_thread(
        client: Client, task_queue: str) -> None:
    """Acknowledged means kept: the first byte of a stream goes out only after the thread took
    the message, so a client that reads one chunk and leaves still finds its turn, answered."""
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        threads = []
        for i, headers in enumerate([{}, {}, {"X-Thread-Id": f"desk-left-{uuid.uuid4().hex[:8]}"}]):
            raw = await ai.chat.completions.with_raw_response.create(
                model="desk", stream=True, extra_headers=headers,
                messages=[{"role": "user", "content": f"left early {i} {uuid.uuid4().hex[:6]}"}])
            stream = raw.parse()
            first = await stream.__anext__()
            await stream.close()  # the client leaves after the first chunk
            assert first.choices[0].delta.role == "assistant"
            threads.append(raw.headers["x-thread-id"])

        async def answered(thread: str) -> bool:
            status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
            return status.last_reply is not None
        for thread in threads:
            await until(partial(answered, thread), f"{thread} answered")
            transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript)
            assert [m.content for m in transcript if m.role == "user"][0].startswith("left early")
