"""Which thread a chat request lands in, with clients that resend their history and clients
that name the thread (`X-Thread-Id`): chats that open with the same words and send at once
keep their own threads (and their own questions), a thread is continued only by the chat whose
last request it took (not by one whose answer merely ends the same way), a retried request is
the same input and a repeated message is a new one."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from temporalio.client import Client

from durable_teams.client.refusals import TurnConflict
from durable_teams.client.send import submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.gateway.core import resent_history as chat_history
from durable_teams.gateway.core.resent_history import ChatHistory, continues, request_keys
from durable_teams.gateway.core.thread_marks import without_marks
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = pytest.mark.workflow

RUNS: list[list[str]] = []
"""The user messages each model call of the `echo` team saw."""


def echo_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """Answers with the user messages it sees; "pick N" with N alone."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    RUNS.append(users)
    last = users[-1]
    return say(last.split()[-1] if last.startswith("pick ") else repr(users))


ECHO = Swarm([Agent("echo", "Echo.")], name="echo").compile()


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


async def ask(ai: openai.AsyncOpenAI, messages: list[dict[str, str]], team: str = "echo",
              **options: Any) -> tuple[str, str]:
    """(answer, thread) of one request."""
    raw = await ai.chat.completions.with_raw_response.create(model=team, messages=messages, **options)  # type: ignore[arg-type]
    return raw.parse().choices[0].message.content or "", raw.headers["x-thread-id"]


def test_an_answer_continues_only_after_a_whole_word() -> None:
    assert continues("4", "4") and continues("Thinking...\n\nThe answer:  4", "The answer: 4")
    assert not continues("14", "4")
    assert not continues("I said 4", "")


def keyed(history: ChatHistory, scope: str = "", user: str | None = None) -> chat_history.RequestKeys:
    return request_keys(chat_history.chat_key(scope, "echo", history, user), history)


def test_a_request_knows_the_id_the_one_before_it_was_given() -> None:
    system = Message(role="system", content="Be brief.")
    first = ChatHistory([system], "hello")
    second = ChatHistory([system, Message(role="user", content="hello"),
                          Message(role="assistant", content="Hi!\n\n<!-- thread: 0123456789ab -->")], "pick 4")
    keys = keyed(first), keyed(second)
    assert keys[1].previous == keys[0].this != keys[1].this
    assert keys[0].previous is None
    assert keyed(first, "token:x").this != keys[0].this  # another caller
    assert keyed(first, user="bob").this != keys[0].this  # another end user
    assert keyed(first, user="").this == keys[0].this  # an empty `user` is none
    assert keyed(ChatHistory([], "hello")).this != keys[0].this  # another system prompt
    # re-wrapped by the client, or its mark dropped: the same request
    assert keyed(ChatHistory([Message(role="system", content=" Be\nbrief.")], " hello\n")).this == keys[0].this
    unmarked = ChatHistory([*second.earlier[:2], Message(role="assistant", content="Hi!")], "pick 4")
    assert keyed(unmarked).this == keys[1].this


@pytest.mark.slow  # over a second: out of the quick loop
async def test_chats_that_open_alike_and_send_at_once_keep_their_own_threads(
        client: Client, task_queue: str) -> None:
    greeting = "Hello, same words for everyone"
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        firsts = await asyncio.gather(*(ask(ai, [user(greeting)]) for _ in range(5)))
        chats = [[user(greeting), assistant(firsts[i][0]), user(f"I am user {i}")] for i in range(5)]
        seconds = await asyncio.gather(*(ask(ai, chat) for chat in chats))
        for chat, (answer, _) in zip(chats, seconds, strict=True):
            chat += [assistant(answer), user("who am I?")]
        thirds = await asyncio.gather(*(ask(ai, chat) for chat in chats))

    assert len({thread for _, thread in firsts}) == 5
    for i in range(5):
        assert seconds[i][0] == repr([greeting, f"I am user {i}"])
        assert thirds[i] == (repr([greeting, f"I am user {i}", "who am I?"]), seconds[i][1])
    assert len({thread for _, thread in seconds}) == 5


async def test_a_chat_continues_only_the_thread_that_took_its_last_request(
        client: Client, task_queue: str) -> None:
    opening = "hello, pick a number"
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        a = [user(opening)]
        b = [user(opening)]
        for chat, text in ((a, None), (b, None), (a, "pick 4"), (b, "pick 14"), (b, "what did I pick?"),
                           (a, "and I?")):
            if text is not None:
                chat.append(user(text))
            answer, _ = await ask(ai, chat)
            chat.append(assistant(answer))

    assert a[3]["content"] == "4" and b[3]["content"] == "14"  # "14" ends with "4"
    assert b[-1]["content"] == repr([opening, "pick 14", "what did I pick?"])
    assert a[-1]["content"] == repr([opening, "pick 4", "and I?"])


async def test_questions_of_chats_that_opened_alike_go_to_their_own_threads(
        client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    first = f"{FIRST} (two customers)"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        opened = await asyncio.gather(*(ask(ai, [user(first)], "desk") for _ in range(2)))
        chats = [[user(first), assistant(said), user(f"Order {n}")]
                 for (said, _), n in zip(opened, ("1111", "2222"), strict=True)]
        approvals = await asyncio.gather(*(ask(ai, chat, "desk") for chat in chats))
        for chat, (answer, _) in zip(chats, approvals, strict=True):
            chat += [assistant(answer), user("yes")]
        done = await asyncio.gather(*(ask(ai, chat, "desk") for chat in chats))

    assert [without_marks(answer) for answer, _ in opened] == [ASKED, ASKED]
    assert [answer for answer, _ in approvals] == [
        f'[desk] Approve refund({{"order": "{n}"}})? Reply yes or no.' for n in ("1111", "2222")]
    assert [answer for answer, _ in done] == [DONE, DONE]
    assert sorted(REFUNDS) == ["1111", "2222"]
    assert [thread for _, thread in approvals] == [thread for _, thread in opened]


async def test_a_retried_request_is_the_same_input_and_a_repeated_message_a_new_one(
        client: Client, task_queue: str) -> None:
    RUNS.clear()
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)), \
            running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        named = {"X-Thread-Id": "echo-named-repeats"}
        said = [await ask(ai, [user(text)], extra_headers=named)
                for text in ("tell me a joke", "another one", "another one")]
        retried = await ask(ai, [user("another one")], extra_headers={**named, "x-stainless-retry-count": "1"})
        keyed = [await ask(ai, [user("more")], extra_headers={**named, "Idempotency-Key": "k1"}) for _ in range(2)]
        named_turns = (await client.get_workflow_handle("echo-named-repeats").query(TeamWorkflow.status)).turns

        opening = "a chat sent twice"
        first = await ask(ai, [user(opening)])
        resent = await ask(ai, [user(opening)], extra_headers={"x-stainless-retry-count": "1"})
        chat = [user(opening), assistant(first[0]), user("second")]
        twice = [await ask(ai, chat) for _ in range(2)]
        chat_turns = (await client.get_workflow_handle(first[1]).query(TeamWorkflow.status)).turns
        family = chat_history.family(chat_history.ChatKey("", "echo"), opening)
        threads = [wf.id async for wf in client.list_workflows(f'WorkflowId STARTS_WITH "{family}"')]

    assert [answer for answer, _ in said] == [
        repr(["tell me a joke"]), repr(["tell me a joke", "another one"]),
        repr(["tell me a joke", "another one", "another one"])]
    assert retried == said[-1]
    assert keyed[0] == keyed[1]
    assert named_turns == 4
    assert resent == first and twice[0] == twice[1] == (repr([opening, "second"]), first[1])
    assert chat_turns == 2 and threads == [first[1]]
    assert RUNS.count([opening, "second"]) == 1


async def test_a_turn_sent_after_another_got_in_first_is_refused(client: Client, task_queue: str) -> None:
    """`after_turns`: of turns sent at once, each counting on the same state, one is taken."""
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(echo_script)):
        handle = await start_conversation(client, "echo", ConversationInput(team_name="echo", single_turn=False),
                                          id=f"echo-after-turns-{task_queue}", task_queue=task_queue)
        results = await asyncio.gather(
            *(submit_turn(client, handle.id, f"turn {n}", turn_id=f"t{n}", after_turns=0) for n in range(5)),
            return_exceptions=True)
        taken = [r for r in results if not isinstance(r, BaseException)]
        again = await submit_turn(client, handle.id, taken[0].turn.text, turn_id=taken[0].turn.turn_id,
                                  after_turns=0)  # the same turn sent again: still that turn
        status = await handle.query(TeamWorkflow.status)

    assert len(taken) == 1 and taken[0].number == again.number == 1
    assert all(isinstance(r, TurnConflict) for r in results if r not in taken)
    assert [str(r) for r in results if isinstance(r, TurnConflict)] == [
        "the conversation has started 1 turns, not 0: another turn came first"] * 4
    assert status.turns == 1 and status.last_input_id == taken[0].turn.turn_id
