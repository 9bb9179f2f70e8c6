"""A chat message never lands in someone else's thread (issue 42, items 2 and 3): chats of one
token with different system prompts, a retried first request, identical conversations of one
token sent alternately or at once, clients that keep the thread mark and clients that strip it,
an edited earlier message, `"user": ""`; with workflow updates on and off."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core import resent_history as chat_history
from durable_teams.gateway.core.resent_history import ChatHistory, chat_key, family
from durable_teams.gateway.core.thread_marks import (
    MARK,
    latest_mark,
    mark_line,
    mark_of,
    without_marks,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

from durable_teams.worker.scripted import ScriptedModel  # isort: skip

pytestmark = pytest.mark.workflow

Chat = list[dict[str, str]]
Send = Callable[[Chat], Awaitable[tuple[str, str]]]


def approval(order: str) -> str:
    return APPROVAL.replace("4711", order)


# -- pure: the mark and the key ---------------------------------------------------------------

@pytest.mark.parametrize("resent", [
    "Hi\n\n<!-- thread: 0123456789ab -->",       # as sent
    "Hi <!-- thread: 0123456789ab -->",           # whitespace collapsed
    "Hi<!--thread:0123456789ab-->",               # whitespace removed
    "HI <!-- THREAD: 0123456789AB -->",           # case changed
    "Hi &lt;!-- thread: 0123456789ab --&gt;",     # HTML-escaped
    "Hi\r\n\r\n<!--\tthread  0123456789ab\n-->",  # re-wrapped, colon dropped
])
def test_the_mark_survives_what_clients_do_to_whitespace_and_case(resent: str) -> None:
    assert latest_mark([Message(role="assistant", content=resent)]) == "0123456789ab"
    assert without_marks(resent).strip().lower() == "hi"


def test_the_latest_mark_names_the_thread_and_only_assistant_messages_carry_one() -> None:
    older, newer = mark_line("x-chat-d-aaaaaaaaaaaa"), mark_line("x-chat-d-bbbbbbbbbbbb")
    history = [Message(role="assistant", content="a" + older), Message(role="user", content="u" + newer),
               Message(role="assistant", content="b" + newer), Message(role="assistant", content="c")]
    assert latest_mark(history) == "bbbbbbbbbbbb"  # a mark the user typed names nothing
    assert latest_mark(history[:2]) == "aaaaaaaaaaaa"
    assert latest_mark([Message(role="assistant", content="<!-- thread: 0123 -->")]) is None  # too short
    assert mark_of("desk-chat-" + "0" * 24 + "-0123456789ab") == "0123456789ab"
    assert MARK.fullmatch(mark_line("t-0123456789ab").strip())


def test_a_chat_key_holds_the_system_prompts_the_user_and_the_caller() -> None:
    def prefix(*system: str, user: str | None = None, scope: str = "token:a") -> str:
        history = ChatHistory([Message(role="system", content=s) for s in system], FIRST)
        return family(chat_key(scope, "desk", history, user), FIRST)

    bob, alice = prefix("Customer: Bob, account BOB-4402"), prefix("Customer: Alice, account ALI-1001")
    assert len({bob, alice, prefix(), prefix(user="bob"), prefix(scope="token:b")}) == 5
    assert prefix(user="") == prefix(user=None) == prefix("", " ")  # empty is absent
    assert prefix(" Customer: Bob,\n account BOB-4402") == bob  # re-wrapped: the same prompt
    assert prefix() == family(chat_history.ChatKey("token:a", "desk"), FIRST)  # as before keys had setups


def test_participant_names_and_the_safety_identifier_are_part_of_the_key() -> None:
    from durable_teams.gateway.core.end_users import end_user

    def prefix(name: object = None, **body: object) -> str:
        message: dict[str, object] = {"role": "user", "content": FIRST}
        if name is not None:
            message["name"] = name
        history = chat_history.chat_history([message])
        return family(chat_key("token:a", "desk", history, end_user(body)), FIRST)

    assert len({prefix(), prefix("alice"), prefix("bob"), prefix(safety_identifier="u-1"), prefix(user="u-1")}) == 4
    assert prefix(safety_identifier="u-1") == prefix(user="u-1")  # OpenAI's newer name for it
    assert prefix(user="u-1", safety_identifier="s-1") not in (prefix(user="u-1"), prefix(user="s-1"))
    assert prefix("") == prefix(safety_identifier=" ") == prefix()  # empty is absent
    with pytest.raises(chat_history.FieldError, match=r"messages\[0\]\.name must be a string"):
        prefix(7)


# -- through the gateway ------------------------------------------------------------------------

def openai_sender(ai: openai.AsyncOpenAI, **options: Any) -> Send:
    """The openai client as most code uses it: the answer's content appended as it came."""
    async def send(chat: Chat) -> tuple[str, str]:
        raw = await ai.chat.completions.with_raw_response.create(model="desk", messages=chat, **options)  # type: ignore[arg-type]
        return raw.parse().choices[0].message.content or "", raw.headers["x-thread-id"]
    return send


def stripping_sender(http: httpx.AsyncClient, **fields: Any) -> Send:
    """Raw HTTP from a client that strips the mark from what it resends (it keeps the words)."""
    async def send(chat: Chat) -> tuple[str, str]:
        resent = [{**m, "content": without_marks(m["content"])} for m in chat]
        response = await http.post("/v1/chat/completions", json={"model": "desk", "messages": resent, **fields})
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]["message"]["content"], response.headers["x-thread-id"]
    return send


async def converse(send: Send, chat: Chat, text: str) -> tuple[str, str]:
    """One message of a chat that resends its history: the answer is appended as it came."""
    chat.append({"role": "user", "content": text})
    answer, thread = await send(chat)
    chat.append({"role": "assistant", "content": answer})
    return without_marks(answer), thread


@pytest.fixture(params=["updates-on", pytest.param("updates-off", marks=pytest.mark.slow)])
def cluster(request: pytest.FixtureRequest, env: object) -> Client:
    """The session's dev server, or one with workflow updates off (turns go in as signals:
    a server of its own, so `slow`). Asks for `env`: these tests are `workflow` tests."""
    name = "client" if request.param == "updates-on" else "old_cluster"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["openai-keeps-the-mark", "httpx-strips-the-mark"])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_two_customers_of_one_front_end_keep_their_threads(cluster: Client, kind: str) -> None:
    """Alice and Bob share the front end's token; their system prompts differ, their words do
    not. Sent alternately, each answer goes to its own thread: each refund once, under the
    right system prompt."""
    REFUNDS.clear()
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    prompts = {"alice": "Customer: Alice, account ALI-1001", "bob": "Customer: Bob, account BOB-4402"}
    async with running_worker(cluster, queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(cluster, queue, tokens=["front-end"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": "Bearer front-end"}) as http:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="front-end", max_retries=0)
        send = openai_sender(ai) if kind.startswith("openai") else stripping_sender(http)
        chats: dict[str, Chat] = {who: [{"role": "system", "content": p}] for who, p in prompts.items()}
        said: dict[str, list[tuple[str, str]]] = {"alice": [], "bob": []}
        orders = {"alice": "1001", "bob": "4402"}
        for text in (first, "Order {}", "yes"):
            for who in ("alice", "bob"):
                said[who].append(await converse(send, chats[who], text.format(orders[who])))
        transcripts = {who: await cluster.get_workflow_handle(said[who][0][1]).query(TeamWorkflow.transcript)
                       for who in said}

    for who, order in orders.items():
        assert [answer for answer, _ in said[who]] == [ASKED, approval(order), DONE]
        assert len({thread for _, thread in said[who]}) == 1
        systems = [m.content or "" for m in transcripts[who] if m.role == "system"]
        assert prompts[who] in systems and not [s for s in systems if "Customer:" in s and s != prompts[who]]
    assert said["alice"][0][1] != said["bob"][0][1]
    assert sorted(REFUNDS) == ["1001", "4402"]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_retried_first_request_is_a_retry_never_another_customers(cluster: Client) -> None:
    """Carol's first request retried by her SDK (`x-stainless-retry-count`): the same thread and
    answer as the request it retries, never Alice's thread with the same words; a retry of a
    request that never arrived opens Carol's own thread."""
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    alice_chat: Chat = [{"role": "system", "content": "Customer: Alice"}, {"role": "user", "content": first}]
    carol_chat: Chat = [{"role": "system", "content": "Customer: Carol"}, {"role": "user", "content": first}]
    retry = {"x-stainless-retry-count": "1"}
    client, task_queue = cluster, f"tq-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=["front-end"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": "Bearer front-end"}) as http:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="front-end", max_retries=0)
        alice = await openai_sender(ai)(alice_chat)
        carol = await openai_sender(ai)(carol_chat)
        carol_again = await openai_sender(ai, extra_headers=retry)(carol_chat)
        raw = await http.post("/v1/chat/completions", headers=retry, json={"model": "desk", "messages": carol_chat})
        # a retry whose first try never reached the gateway: Dave's own thread, not Alice's
        dave = await openai_sender(ai, extra_headers=retry)(
            [{"role": "system", "content": "Customer: Dave"}, {"role": "user", "content": first}])
        turns = (await client.get_workflow_handle(carol[1]).query(TeamWorkflow.status)).turns

    assert carol_again == carol and (raw.json()["choices"][0]["message"]["content"], raw.headers["x-thread-id"]) == carol
    assert carol[1] != alice[1] and dave[1] not in (alice[1], carol[1])
    assert turns == 1  # the retries sent nothing new
    assert without_marks(carol[0]) == without_marks(dave[0]) == ASKED


@pytest.mark.parametrize("at_once", [False, True], ids=["alternately", "at-once"])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_identical_conversations_of_one_token_stay_apart(cluster: Client, at_once: bool) -> None:
    """Two chats of one token, no system prompt, the same words (two agent runs, say): each
    ends with its own outcome and exactly its own refund."""
    REFUNDS.clear()
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(cluster, queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(cluster, queue, tokens=["agents"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="agents", max_retries=0)
        send = openai_sender(ai)
        chats: list[Chat] = [[], []]

        async def run(n: int) -> list[tuple[str, str]]:
            return [await converse(send, chats[n], text) for text in (first, "Order 7", "yes")]
        said: list[list[tuple[str, str]]] = [[], []]
        if at_once:
            said = list(await asyncio.gather(run(0), run(1)))
        else:
            for text in (first, "Order 7", "yes"):
                for n in (0, 1):
                    said[n].append(await converse(send, chats[n], text))

    for n in (0, 1):
        assert [answer for answer, _ in said[n]] == [ASKED, approval("7"), DONE]
        assert len({thread for _, thread in said[n]}) == 1
    assert said[0][0][1] != said[1][0][1]
    assert REFUNDS == ["7", "7"]  # one each: none lost, none doubled


async def test_unmarked_identical_conversations_never_merge(client: Client, task_queue: str) -> None:
    """A client that strips the mark, two identical chats of one token (no system prompt, no
    `user`): the threads that fit cannot be told apart, so no guess: each request goes on in a
    new thread of its own with the history it sent. Nothing merges and no refund runs for a
    chat that did not approve one."""
    REFUNDS.clear()
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        send = stripping_sender(http)
        chats: list[Chat] = [[], []]
        said: list[list[tuple[str, str]]] = [[], []]
        for text in (first, "Order 7"):
            for n in (0, 1):
                said[n].append(await converse(send, chats[n], text))

    threads = [thread for chat in said for _, thread in chat]
    assert len(set(threads)) == 4
    assert [a for a, _ in said[0]] == [a for a, _ in said[1]] == [
        ASKED, f"I saw {['system:Help.', f'user:{first}', f'assistant:{ASKED}', 'user:Order 7']}"]
    assert REFUNDS == []


@pytest.mark.slow  # over a second (1.5 s alone, 3.0 s in a CI run): out of the quick loop
async def test_an_edited_earlier_message_never_lands_in_another_chats_thread(client: Client, task_queue: str) -> None:
    """Alice edits her order number to Bob's: her history now reads like Bob's, word for word,
    but carries her thread's mark. It opens a thread of its own (never Bob's); Bob's goes on."""
    REFUNDS.clear()
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        send = openai_sender(openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0))
        alice: Chat = []
        bob: Chat = []
        a = [await converse(send, alice, first), await converse(send, alice, "Order 1111")]
        b = [await converse(send, bob, first), await converse(send, bob, "Order 2222")]
        alice[2] = {"role": "user", "content": "Order 2222"}  # edited in the UI
        alice[3] = {"role": "assistant", "content": approval("2222")}
        edited = await converse(send, alice, "yes")
        bob_done = await converse(send, bob, "yes")
        truncated = await converse(send, [m for m in bob[-3:-1]], "and now?")  # the mark cut off

    assert edited[1] not in (a[0][1], b[0][1])
    assert bob_done == (DONE, b[0][1])
    assert truncated[1] not in (a[0][1], b[0][1])
    assert REFUNDS == ["2222"]  # Bob's, once: the edited chat approved nothing of his


@pytest.mark.parametrize("user", ["", "   "])
async def test_an_empty_user_is_no_user(cluster: Client, user: str) -> None:
    """`"user": ""` keeps the thread: the open question is answered, not asked again; and it is
    the same chat as one that sends no `user` at all."""
    REFUNDS.clear()
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(cluster, queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(cluster, queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        chat: Chat = []
        said = [await converse(openai_sender(ai, user=user), chat, first),
                await converse(stripping_sender(http, user=user), chat, "Order 31"),
                await converse(openai_sender(ai), chat, "yes")]  # no `user` now: the same chat
        memo = await (await cluster.get_workflow_handle(said[0][1]).describe()).memo()
        named = await http.post("/v1/chat/completions", headers={"X-Thread-Id": f"desk-named-{queue}"},
                                json={"model": "desk", "user": user, "messages": [{"role": "user", "content": "hi"}]})
        named_memo = await (await cluster.get_workflow_handle(f"desk-named-{queue}").describe()).memo()

    assert [answer for answer, _ in said] == [ASKED, approval("31"), DONE]
    assert len({thread for _, thread in said}) == 1
    assert REFUNDS == ["31"]
    assert "user" not in memo and "user" not in named_memo and named.status_code == 200


def test_marks_are_html_comments_a_markdown_ui_hides() -> None:
    line = mark_line("desk-chat-" + "0" * 24 + "-0123456789ab")
    assert re.fullmatch(r"\n\n<!-- thread: [0-9a-f]{12} -->", line)


async def test_without_marks_a_chat_keeps_its_thread_by_its_words(client: Client, task_queue: str) -> None:
    """`serve --no-chat-marks`: answers carry no mark, and a chat whose thread is the only one
    that fits still keeps it (a refund runs once)."""
    REFUNDS.clear()
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, chat_marks=False) as url:
        send = openai_sender(openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0))
        chat: Chat = []
        said = [await converse(send, chat, text) for text in (first, "Order 12", "yes")]

    assert [m["content"] for m in chat if m["role"] == "assistant"] == [ASKED, approval("12"), DONE]
    assert [answer for answer, _ in said] == [ASKED, approval("12"), DONE]
    assert len({thread for _, thread in said}) == 1 and REFUNDS == ["12"]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_litellm_keeps_the_mark_and_its_thread(client: Client, task_queue: str) -> None:
    """litellm (`openai/<team>` at the gateway): two identical chats of one key, sent
    alternately, each keep their own thread through the mark litellm resends."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of its price list
    import litellm  # a test extra
    litellm.disable_aiohttp_transport = True  # httpx: aiohttp sessions it leaves open are reported by a later test's GC
    REFUNDS.clear()
    first = f"{FIRST} ({uuid.uuid4().hex[:6]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        async def send(chat: Chat) -> tuple[str, str]:
            response = await litellm.acompletion(model="openai/desk", api_base=f"{url}/v1", api_key="unused",
                                                 messages=chat, num_retries=0)
            threads = [response._hidden_params.get("additional_headers", {}).get(name)
                       for name in ("llm_provider-x-thread-id", "x-thread-id")]
            return response.choices[0].message.content or "", next((t for t in threads if t), "")
        chats: list[Chat] = [[], []]
        said: list[list[tuple[str, str]]] = [[], []]
        try:
            for text in (first, "Order 9", "yes"):
                for n in (0, 1):
                    said[n].append(await converse(send, chats[n], text))
        finally:  # litellm caches its HTTP sessions: left open, a later test's GC reports them
            await litellm.close_litellm_async_clients()

    for n in (0, 1):
        assert [answer for answer, _ in said[n]] == [ASKED, approval("9"), DONE]
    assert REFUNDS == ["9", "9"]
    assert MARK.search(chats[0][1]["content"]) and chats[0][1]["content"] != chats[1][1]["content"]
