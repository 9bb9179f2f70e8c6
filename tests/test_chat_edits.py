"""A chat client's edit of an earlier message (Open WebUI's and LibreChat's edit and
regenerate): the gateway forks the thread at the edited turn's start, answers from the fork,
and the chat's next request continues the fork; the original stays as it was."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.thread_marks import latest_mark
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .time_travel_team import REFUNDS, execute_refund, support, support_model
from .waiting import until

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


async def ask(ai: openai.AsyncOpenAI, team: str, messages: list[dict[str, str]],
              **options: Any) -> tuple[str, str]:
    """(answer, thread) of one request."""
    raw = await ai.chat.completions.with_raw_response.create(model=team, messages=messages, **options)  # type: ignore[arg-type]
    return raw.parse().choices[0].message.content or "", raw.headers["x-thread-id"]


def users_of(model: ScriptedModel) -> list[str]:
    """The newest user message of each model call."""
    return [next(m["content"] for m in reversed(messages) if m["role"] == "user")
            for _, messages, _ in model.requests]


async def history_length(client: Client, thread: str) -> int:
    return len((await client.get_workflow_handle(thread).fetch_history()).events)


@pytest.mark.slow  # over a second: out of the quick loop
async def test_an_edited_earlier_message_forks_the_thread_at_that_turn(client: Client, task_queue: str) -> None:
    team, model = support(), ScriptedModel(support_model)
    hello = f"hello {uuid.uuid4().hex[:6]}"  # a chat family of its own on the session's server
    async with running_worker(client, task_queue, [team], model), running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        name, chat = team.spec.name, [user(hello)]
        threads = []
        for text in (None, "refund A1", "thanks"):
            if text is not None:
                chat.append(user(text))
            answer, thread = await ask(ai, name, chat)
            chat.append(assistant(answer))
            threads.append(thread)
        original = threads[0]
        before, calls = await history_length(client, original), len(model.requests)
        edited = [*chat[:2], user("refund B2")]  # turn 2 edited, the rest cut off, as UIs resend
        answer, fork = await ask(ai, name, edited)
        again, again_thread = await ask(ai, name, edited, extra_headers={"x-stainless-retry-count": "1"})
        edited.append(assistant(answer))
        edited.append(user("and one more thing"))
        next_answer, next_thread = await ask(ai, name, edited)
        fork_status = await client.get_workflow_handle(fork).query(TeamWorkflow.status)
        original_status = await client.get_workflow_handle(original).query(TeamWorkflow.status)
        after = await history_length(client, original)

        async def listed() -> set[str] | None:
            prefix = original[: -12]
            found = {wf.id async for wf in client.list_workflows(f'WorkflowId STARTS_WITH "{prefix}"')}
            return found if fork in found else None
        family = await until(listed, "the fork listed")

    assert threads == [original] * 3 and fork != original
    assert answer.startswith("done: refunded B2") and latest_mark([Message(role="assistant", content=answer)]) == fork[-12:]
    assert (again, again_thread) == (answer, fork)  # the request sent again: the same fork, no second
    assert (next_answer, next_thread) == ("support heard: and one more thing", fork)
    # the fork's model calls: turn 2 (a call, the refund, its confirmation) and turn 3; turn 1's
    # model call did not run again, and the original's refund was not paid again
    assert users_of(model)[calls:] == ["refund B2", "refund B2", "and one more thing"]
    assert REFUNDS == {"A1": 1, "B2": 1}
    assert fork_status.forked_from is not None and fork_status.forked_from.startswith(f"{original}@")
    assert fork_status.turns == 3 and original_status.turns == 3 and original_status.forked_from is None
    assert after == before  # the original's history is as it was
    assert family == {original, fork}  # no orphaned thread opened with the pasted history


@pytest.mark.slow  # over a second: out of the quick loop
async def test_an_edit_from_another_caller_or_of_the_first_message_forks_nothing(
        client: Client, task_queue: str) -> None:
    team, model = support(), ScriptedModel(support_model)
    hello = f"hello {uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], model), running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        name, chat = team.spec.name, [user(hello)]
        for text in (None, "refund A1"):
            if text is not None:
                chat.append(user(text))
            answer, original = await ask(ai, name, chat)
            chat.append(assistant(answer))
        edited = [*chat[:2], user("refund B2")]
        other_answer, other = await ask(ai, name, edited, user="someone-else")  # another chat key
        first_answer, first = await ask(ai, name, [user(f"{hello}, edited")])
        other_status = await client.get_workflow_handle(other).query(TeamWorkflow.status)
        first_status = await client.get_workflow_handle(first).query(TeamWorkflow.status)

    assert other not in (original, first) and first != original
    assert other_status.forked_from is None and first_status.forked_from is None
    assert other_answer.startswith("done: refunded B2") and first_answer.startswith("support heard:")


async def test_an_edit_sent_as_a_stream_streams_the_forks_answer(client: Client, task_queue: str) -> None:
    team, model = support(), ScriptedModel(support_model, stream=True)
    hello = f"hello {uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], model), running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        name, chat = team.spec.name, [user(hello)]
        for text in (None, "first question", "second question"):
            if text is not None:
                chat.append(user(text))
            answer, original = await ask(ai, name, chat)
            chat.append(assistant(answer))
        edited = [*chat[:2], user("another question")]
        stream = await ai.chat.completions.with_raw_response.create(
            model=name, messages=edited, stream=True)  # type: ignore[arg-type]
        fork = stream.headers["x-thread-id"]
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream.parse() if c.choices])
        fork_status = await client.get_workflow_handle(fork).query(TeamWorkflow.status)

    assert fork != original and fork_status.forked_from is not None
    assert streamed.startswith("support heard: another question")
    assert latest_mark([Message(role="assistant", content=streamed)]) == fork[-12:]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_scoped_callers_edit_forks_its_own_thread_and_the_fork_keeps_its_scope(
        client: Client, task_queue: str) -> None:
    team, model = support(), ScriptedModel(support_model)
    hello = f"hello {uuid.uuid4().hex[:6]}"
    tokens = [Token("tok-a", "shop"), Token("tok-b", "crm")]
    async with running_worker(client, task_queue, [team], model), \
            running_gateway(client, task_queue, tokens=tokens) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        shop = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tok-a", max_retries=0)
        crm = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tok-b", max_retries=0)
        name, chat = team.spec.name, [user(hello)]
        for text in (None, "first question", "second question"):
            if text is not None:
                chat.append(user(text))
            answer, original = await ask(shop, name, chat)
            chat.append(assistant(answer))
        edited = [*chat[:2], user("another question")]
        _, fork = await ask(shop, name, edited)
        _, theirs = await ask(crm, name, edited)  # the shop's history, mark and all, sent by crm
        seen = await http.get(f"/threads/{fork}", headers={"Authorization": "Bearer tok-a"})
        hidden = await http.get(f"/threads/{fork}", headers={"Authorization": "Bearer tok-b"})
        theirs_status = await client.get_workflow_handle(theirs).query(TeamWorkflow.status)

    assert seen.status_code == 200 and seen.json()["forked_from"].startswith(f"{original}@")
    assert hidden.status_code == 404  # the fork keeps the original's scope
    assert theirs not in (original, fork) and theirs_status.forked_from is None


@pytest.mark.slow  # over a second: out of the quick loop
async def test_an_edit_of_a_chat_whose_thread_closed_forks_it(client: Client, task_queue: str) -> None:
    """A chat edited after its thread closed (`serve --chat-idle` went by): the closed thread
    is forked at the edited turn, and the fork answers."""
    team, model = support(), ScriptedModel(support_model)
    hello = f"hello {uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], model), running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        name, chat = team.spec.name, [user(hello)]
        for text in (None, "first question", "second question"):
            if text is not None:
                chat.append(user(text))
            answer, original = await ask(ai, name, chat)
            chat.append(assistant(answer))
        handle = client.get_workflow_handle(original)
        await handle.signal(TeamWorkflow.close)
        await handle.result()
        answer, fork = await ask(ai, name, [*chat[:2], user("another question")])
        fork_status = await client.get_workflow_handle(fork).query(TeamWorkflow.status)

    assert fork != original and answer.startswith("support heard: another question")
    assert fork_status.forked_from is not None and fork_status.forked_from.startswith(f"{original}@")
    assert fork_status.closed is False and fork_status.turns == 2


@pytest.mark.slow  # a gateway and three threads
async def test_an_edit_after_an_answered_question_forks_at_the_edited_turn(client: Client, task_queue: str) -> None:
    """The chat answered an approval before the edited turn: its user messages are the thread's
    turns and answers in order (the answers' words read from their checkpoints), so the edit
    still forks there. An edited answer is not a turn: a new thread opens, as before."""
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"]).compile()
    model = ScriptedModel(support_model)
    hello = f"hello {uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [team], model), running_gateway(client, task_queue) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        name, chat, threads = team.spec.name, [user(hello)], []
        for text in (None, "refund A1", "yes", "thanks"):
            if text is not None:
                chat.append(user(text))
            answer, thread = await ask(ai, name, chat)
            chat.append(assistant(answer))
            threads.append(thread)
        original, calls = threads[0], len(model.requests)
        edited = [*chat[:6], user("refund B2")]  # turn 3 ("thanks") edited, after the answer "yes"
        asked, fork = await ask(ai, name, edited)
        done, fork_again = await ask(ai, name, [*edited, assistant(asked), user("yes")])
        answer_edited = [*chat[:4], user("no")]  # the approval's answer edited: not a turn
        _, other = await ask(ai, name, answer_edited)
        fork_status = await client.get_workflow_handle(fork).query(TeamWorkflow.status)
        other_status = await client.get_workflow_handle(other).query(TeamWorkflow.status)
    assert threads == [original] * 4 and fork not in (original, other) and fork_again == fork
    assert "execute_refund" in asked and done.startswith("done: refunded B2")
    assert fork_status.forked_from is not None and fork_status.forked_from.startswith(f"{original}@")
    assert fork_status.turns == 3  # turns 1 and 2 inherited, the edited turn 3 its own
    assert users_of(model)[calls:calls + 2] == ["refund B2", "refund B2"]  # nothing of turns 1-2 again
    assert REFUNDS["A1"] == 1 and REFUNDS["B2"] == 1
    assert other != original and other_status.forked_from is None  # the edited answer: a new thread
