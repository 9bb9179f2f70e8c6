"""An Idempotency-Key stands for one request on every route that takes one: the same request
again is the first outcome (nothing run twice), the key with other content a 409
`idempotency_key_reused`, on the chat path without `X-Thread-Id` too, however late and after a
gateway restart (the key's record is kept by Temporal: durable_teams/gateway/core/idempotency.py).
Every door's key in one table: tests/test_idempotency_table.py.
And a retried chat request whose history carries a mark of a thread that no longer fits stays
a retry: one new thread, one outcome."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.thread_marks import without_marks
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # gateways of their own, several seconds


def chat(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": t} for n, t in enumerate(texts)]


async def keyed_chat(http: httpx.AsyncClient, messages: list[dict[str, str]], key: str,
                     **headers: str) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers={"Idempotency-Key": key, **headers},
                           json={"model": "desk", "messages": messages})


def answer(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


@pytest.fixture(params=["updates-on", "updates-off"])
def cluster(request: pytest.FixtureRequest, env: object) -> Client:
    """The session's dev server, or one with workflow updates off (turns go in as signals)."""
    name = "client" if request.param == "updates-on" else "old_cluster"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


async def test_a_key_on_the_chat_path_without_a_thread_id_is_one_request_however_late(
        cluster: Client, task_queue: str) -> None:
    """The chat resends its history and names no thread; every request has its own key."""
    REFUNDS.clear()
    client = cluster
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
            asked = await keyed_chat(http, chat(first), "c1")
            other = await keyed_chat(http, chat("something else entirely"), "c1")  # another chat, same key
            other_last = await keyed_chat(http, chat(first, answer(asked), "Order 8"), "c1")
            again = await keyed_chat(http, chat(first), "c1")
            approval = await keyed_chat(http, chat(first, answer(asked), "Order 7"), "c2")
            done = await keyed_chat(http, chat(first, answer(asked), "Order 7", answer(approval), "yes"), "c3")
        async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
            # a restarted gateway: the keys are found in Temporal, not in the process
            late_yes = await keyed_chat(http, chat(first, answer(asked), "Order 7", answer(approval), "yes"), "c3")
            late_no = await keyed_chat(http, chat(first, answer(asked), "Order 7", answer(approval), "no"), "c3")
            late_first = await keyed_chat(http, chat(first), "c1")
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            with pytest.raises(openai.ConflictError) as by_client:
                await ai.chat.completions.create(model="desk", messages=[{"role": "user", "content": "hi"}],
                                                 extra_headers={"Idempotency-Key": "c2"})
        thread = asked.headers["x-thread-id"]
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)

    assert without_marks(answer(asked)) == ASKED and without_marks(answer(approval)) == APPROVAL.replace("4711", "7")
    for reused in (other, other_last, late_no):
        assert reused.status_code == 409, reused.text
        assert reused.json()["error"]["type"] == "idempotency_key_reused"
    assert answer(again) == answer(asked) and again.headers["x-thread-id"] == thread
    assert without_marks(answer(done)) == DONE and answer(late_yes) == answer(done)
    assert without_marks(answer(late_first)) == DONE  # the turn it started, as it ended
    assert {r.headers["x-thread-id"] for r in (approval, done, late_yes, late_first)} == {thread}
    assert by_client.value.status_code == 409
    assert status.turns == 1 and not status.pending and REFUNDS == ["7"]


async def test_a_retried_request_with_a_mark_of_no_fitting_thread_opens_one_thread(
        client: Client, task_queue: str) -> None:
    """The history carries the mark of a thread that ended: the request opens a new thread
    with it; the SDK's retry and the same body sent again are that request, not a second."""
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        raw = await ai.chat.completions.with_raw_response.create(
            model="desk", messages=[{"role": "user", "content": first}])
        old = raw.headers["x-thread-id"]
        asked = raw.parse().choices[0].message.content or ""
        await client.get_workflow_handle(old).terminate("the chat's thread ended")
        history: Any = [{"role": "user", "content": first}, {"role": "assistant", "content": asked},
                        {"role": "user", "content": "Order 7"}]
        sent = [await ai.chat.completions.with_raw_response.create(model="desk", messages=history),
                await ai.chat.completions.with_raw_response.create(
                    model="desk", messages=history, extra_headers={"x-stainless-retry-count": "1"}),
                await ai.chat.completions.with_raw_response.create(model="desk", messages=history)]
        raw_retry = await http.post("/v1/chat/completions", headers={"x-stainless-retry-count": "2"},
                                    json={"model": "desk", "messages": history})
        threads = {r.headers["x-thread-id"] for r in sent} | {raw_retry.headers["x-thread-id"]}
        answers = {r.parse().choices[0].message.content for r in sent} | {answer(raw_retry)}
        new = threads.pop() if len(threads) == 1 else None
        turns = (await client.get_workflow_handle(new).query(TeamWorkflow.status)).turns if new else None
    assert new is not None and new != old, threads
    assert len(answers) == 1 and without_marks(answers.pop() or "").startswith("I saw [")  # the history it opened with
    assert turns == 1


async def test_a_late_retry_of_a_keyed_responses_request_is_its_first_response(client: Client, task_queue: str) -> None:
    """A request continuing a response, retried after the thread moved on: its own response
    (was a 409 not_latest_response), nothing sent; the key with another input a 409."""
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk", "echo"]) as url:  # as `serve` names its teams
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        first = await ai.responses.create(model="desk", input=FIRST)
        keyed = {"Idempotency-Key": f"r-{uuid.uuid4().hex[:6]}"}
        order = await ai.responses.create(model="desk", input="Order 7", previous_response_id=first.id,
                                          extra_headers=keyed)
        approval = next(item for item in order.output if item.type == "mcp_approval_request").id
        done = await ai.responses.create(model="desk", previous_response_id=order.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": approval, "approve": True}])
        await ai.responses.create(model="desk", input="thanks", previous_response_id=done.id)
        late = await ai.responses.create(model="desk", input="Order 7", previous_response_id=first.id,
                                         extra_headers=keyed)
        with pytest.raises(openai.ConflictError) as other:
            await ai.responses.create(model="desk", input="Order 8", previous_response_id=first.id,
                                      extra_headers=keyed)
        turns = (await client.get_workflow_handle(ResponseRef.parse(first.id).thread).query(TeamWorkflow.status)).turns
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            first_keyed = {"Idempotency-Key": f"r1-{uuid.uuid4().hex[:6]}"}
            await http.post("/v1/responses", headers=first_keyed, json={"model": "desk", "input": FIRST})
            other_team = await http.post("/v1/responses", headers=first_keyed, json={"model": "echo", "input": FIRST})
    assert late.id == order.id and late.output_text == order.output_text
    assert other.value.status_code == 409 and other.value.code == "idempotency_key_reused"  # OpenAI's shape
    assert other_team.status_code == 409 and other_team.json()["error"]["type"] == "idempotency_key_reused"
    assert done.output_text == DONE and turns == 2 and REFUNDS == ["7"]


async def test_one_keyed_request_sent_twice_at_once_is_one_turn(client: Client, task_queue: str) -> None:
    """A client that fires its request and its retry together (a first message, and a history
    whose thread ended): one thread, one turn, the same answer to both; another caller's request
    under the same key is its own, and a 409 does not name the first request's thread."""
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=["tok-1", "tok-2"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": "Bearer tok-1"}) as http:
        twins = await asyncio.gather(*(keyed_chat(http, chat(first), "twin") for _ in range(3)))
        thread = twins[0].headers["x-thread-id"]
        await client.get_workflow_handle(thread).terminate("the chat's thread ended")
        history = chat(first, answer(twins[0]), "Order 7")
        retried = await asyncio.gather(*(http.post(
            "/v1/chat/completions", headers={"x-stainless-retry-count": str(n)},
            json={"model": "desk", "messages": history}) for n in range(3)))
        other_caller = await keyed_chat(http, chat(first), "twin", Authorization="Bearer tok-2")
        reused = await keyed_chat(http, chat("other words"), "twin")
        new = {r.headers["x-thread-id"] for r in retried}
        turns = [(await client.get_workflow_handle(t).query(TeamWorkflow.status)).turns for t in (thread, *new)]
    assert {r.headers["x-thread-id"] for r in twins} == {thread} and len({answer(r) for r in twins}) == 1
    assert len(new) == 1 and thread not in new and len({answer(r) for r in retried}) == 1
    assert turns == [1, 1]
    assert answer(other_caller) == answer(twins[0]).replace(thread[-12:], other_caller.headers["x-thread-id"][-12:])
    assert other_caller.headers["x-thread-id"] != thread
    assert reused.status_code == 409 and thread not in reused.text


async def test_a_late_retry_of_a_marked_chat_request_is_its_first_outcome(client: Client, task_queue: str) -> None:
    """No key: the SDK retries "Order 7" after the chat went on (its answer approved, the
    refund ran). The history carries the thread's mark, and the thread took this very request:
    its first outcome (the approval it led to), nothing sent, no second thread or refund."""
    REFUNDS.clear()
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        history: Any = [{"role": "user", "content": first}]
        said = []
        for text in (None, "Order 7", "yes"):
            if text is not None:
                history.append({"role": "user", "content": text})
            raw = await ai.chat.completions.with_raw_response.create(model="desk", messages=history)
            said.append((raw.parse().choices[0].message.content or "", raw.headers["x-thread-id"]))
            history.append({"role": "assistant", "content": said[-1][0]})
        order_request = history[:3]
        late = await ai.chat.completions.with_raw_response.create(
            model="desk", messages=order_request, extra_headers={"x-stainless-retry-count": "1"})
        resent = await http.post("/v1/chat/completions", json={"model": "desk", "messages": order_request})
        thread = said[0][1]
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
    assert {t for _, t in said} == {thread} and without_marks(said[-1][0]) == DONE
    assert late.headers["x-thread-id"] == resent.headers["x-thread-id"] == thread
    # the turn "Order 7" was part of, as it ended
    assert without_marks(late.parse().choices[0].message.content or "") == without_marks(answer(resent)) == DONE
    assert status.turns == 1 and REFUNDS == ["7"]


async def test_a_late_retry_of_a_keyed_resent_conversation_is_its_first_response(
        client: Client, task_queue: str) -> None:
    """A Responses request resending its whole conversation (no response ids, no marks) under a
    key, retried after its thread moved on: the response it made (its thread no longer fits the
    history it resends, so only the key's record tells where it went), nothing run again."""
    opening = f"hello ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        async def resend(*texts: str, key: str | None = None) -> httpx.Response:
            return await http.post("/v1/responses", headers={"Idempotency-Key": key} if key else {},
                                   json={"model": "desk", "input": chat(*texts)})
        first = (await resend(opening, "How can I help?", "one")).json()
        said = without_marks(first["output"][-1]["content"][0]["text"])
        key = f"r-{uuid.uuid4().hex[:6]}"
        keyed = (await resend(opening, "How can I help?", "one", said, "two", key=key)).json()
        said_two = without_marks(keyed["output"][-1]["content"][0]["text"])
        moved_on = await resend(opening, "How can I help?", "one", said, "two", said_two, "three")
        late = await resend(opening, "How can I help?", "one", said, "two", key=key)
        thread = ResponseRef.parse(first["id"]).thread
        turns = (await client.get_workflow_handle(thread).query(TeamWorkflow.status)).turns
    assert ResponseRef.parse(keyed["id"]).thread == ResponseRef.parse(moved_on.json()["id"]).thread == thread
    assert late.status_code == 200 and late.json()["id"] == keyed["id"], late.text
    assert turns == 3  # one, two and three: the late retry ran nothing
