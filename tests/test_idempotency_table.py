"""One table over every door that takes a key (durable_teams/gateway/core/idempotency.py): for
each, a key sent with the same request again is the first outcome, the key with other content
the door's own conflict error, and the same request sent several times at once one run. What
ran is counted in Temporal (the thread's turns) and in the tool's own record (refunds), so
"never twice" is seen, not assumed.

MCP's `tools/call` and the LangGraph door's runs take no idempotency key (a client's retry
there is a new call), so they have no row."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.send import submit_turn
from durable_teams.gateway.core.idempotency import content_id, input_id
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import keyed_turn, running_gateway, say_on
from .teams import DESK, FIRST, REFUNDS, desk_script
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway of its own, many requests

Target = dict[str, Any]


def unique(text: str) -> str:
    return f"{text} ({uuid.uuid4().hex[:6]})"


async def turns_of(client: Client, thread: str) -> int:
    return (await client.get_workflow_handle(thread).query(TeamWorkflow.status)).turns


def error_type(response: httpx.Response) -> str:
    """The conflict as the HTTP doors give it: 409 and the error's type."""
    return f"{response.status_code} {response.json()['error']['type']}" if response.status_code >= 400 else "ok"


@dataclass
class Door:
    """A way in that takes a key. `prepare` makes a fresh target for one key (a thread, an
    approval waiting); `send(http, target, key, content)` sends the request ("a", or other
    content "b"); `outcome` is what a retry repeats; `conflict` the door's error for the key
    with other content, read from its answer; `runs(client, target, answers)` counts what ran."""

    name: str
    prepare: Callable[[httpx.AsyncClient, Client], Awaitable[Target]]
    send: Callable[[httpx.AsyncClient, Target, str, str], Awaitable[httpx.Response]]
    outcome: Callable[[httpx.Response], Any]
    conflict: Callable[[httpx.Response], str]
    expected_conflict: str
    runs: Callable[[Client, Target, list[httpx.Response]], Awaitable[int]]


async def nothing(http: httpx.AsyncClient, client: Client) -> Target:
    return {"first": unique(FIRST)}


async def a_thread(http: httpx.AsyncClient, client: Client) -> Target:
    return {"thread": (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]}


async def an_approval(http: httpx.AsyncClient, client: Client) -> Target:
    """A thread whose refund of a fresh order waits for approval."""
    thread = (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]
    order = str(uuid.uuid4().int % 10**8)
    await say_on(http, thread, FIRST)
    await say_on(http, thread, f"Order {order}")
    pending = (await client.get_workflow_handle(thread).query(TeamWorkflow.status)).pending
    return {"thread": thread, "question": pending[0].question_id, "order": order}


async def a_turn_done(http: httpx.AsyncClient, client: Client) -> Target:
    thread = (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]
    await say_on(http, thread, "hello")
    return {"thread": thread}


async def a_response(http: httpx.AsyncClient, client: Client) -> Target:
    made = await http.post("/v1/responses", json={"model": "desk", "input": "hello"})
    return {"response": made.json()["id"]}


async def start(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post("/threads", headers={"Idempotency-Key": key},
                           json={"team": "desk", "task": f"{t['first']} {content}"})


async def turn(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    status, events = await keyed_turn(http, t["thread"], f"{FIRST} {content}", key)
    return httpx.Response(status, json=events if status == 200 else events[0])


async def answer(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post(f"/threads/{t['thread']}/questions/{t['question']}", headers={"Idempotency-Key": key},
                           json={"approved": content == "a"})


async def fork(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post(f"/threads/{t['thread']}/fork", headers={"Idempotency-Key": key},
                           json={"message": f"fork {content}"})


def chat_messages(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": t} for n, t in enumerate(texts)]


async def named_chat(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers={"Idempotency-Key": key, "X-Thread-Id": t["named"]},
                           json={"model": "desk", "messages": chat_messages(f"{FIRST} {content}")})


async def a_name(http: httpx.AsyncClient, client: Client) -> Target:
    return {"named": f"desk-named-{uuid.uuid4().hex[:8]}"}


async def history_chat(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers={"Idempotency-Key": key},
                           json={"model": "desk", "messages": chat_messages(f"{t['first']} {content}")})


async def response(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post("/v1/responses", headers={"Idempotency-Key": key},
                           json={"model": "desk", "input": f"{t['first']} {content}"})


async def an_earlier_response(http: httpx.AsyncClient, client: Client) -> Target:
    """A response the thread has moved on from: continuing it forks the thread there."""
    made = (await http.post("/v1/responses", json={"model": "desk", "input": "hello"})).json()["id"]
    await http.post("/v1/responses", json={"model": "desk", "input": "and on", "previous_response_id": made})
    return {"response": made}


async def resent_conversation(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    """A whole conversation resent (a client that keeps no response ids), its first message new."""
    return await http.post("/v1/responses", headers={"Idempotency-Key": key}, json={
        "model": "desk", "input": chat_messages(t["first"], "How can I help?", f"{FIRST} {content}")})


async def next_response(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    return await http.post("/v1/responses", headers={"Idempotency-Key": key}, json={
        "model": "desk", "input": f"and then {content}", "previous_response_id": t["response"]})


async def a2a_message(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    """SendMessage whose `messageId` is the key (a new context, named after it)."""
    message = {"messageId": key, "role": "ROLE_USER", "parts": [{"text": f"{t['first']} {content}"}]}
    return await http.post("/a2a/desk", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                              "params": {"message": message}})


def a2a_error(response: httpx.Response) -> str:
    body = response.json()
    return f"{body['error']['code']} {body['error']['message']}" if "error" in body else "ok"


def a2a_task(response: httpx.Response) -> Any:
    body = response.json()
    assert "result" in body, body
    return body["result"]["task"]["id"], body["result"]["task"]["status"]["state"]


def chat_outcome(response: httpx.Response) -> Any:
    return response.headers["x-thread-id"], response.json()["choices"][0]["message"]["content"]


async def thread_turns(client: Client, thread: str) -> int:
    return await turns_of(client, thread)


async def turns_in_answers(client: Client, t: Target, answers: list[httpx.Response], thread_of: Callable[
        [httpx.Response], str]) -> int:
    """The turns of every thread the answers name (one thread, one turn: else more)."""
    return sum([await begun_turns(client, thread) for thread in {thread_of(r) for r in answers}])


async def begun_turns(client: Client, thread: str) -> int:
    """The thread's turns, once its first has begun (a task starts it a moment after the start)."""
    return await until(lambda: turns_of(client, thread), f"{thread}'s first turn")


DOORS = [
    Door("native start (POST /threads with a task)", nothing, start, lambda r: r.json()["thread_id"],
         error_type, "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: r.json()["thread_id"])),
    Door("native turn (POST /threads/{id}/turns)", a_thread, turn, lambda r: tuple(e["type"] for e in r.json()),
         error_type, "409 idempotency_key_reused", lambda c, t, rs: thread_turns(c, t["thread"])),
    Door("native answer (POST /threads/{id}/questions/{qid})", an_approval, answer, lambda r: tuple(sorted(r.json().items())),
         error_type, "409 idempotency_key_reused", lambda c, t, rs: refunds_once_replied(c, t)),
    Door("fork (POST /threads/{id}/fork)", a_turn_done, fork, lambda r: r.json()["thread_id"],
         error_type, "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: r.json()["thread_id"])),
    Door("chat with X-Thread-Id", a_name, named_chat, chat_outcome, error_type, "409 idempotency_key_reused",
         lambda c, t, rs: thread_turns(c, t["named"])),
    Door("chat resending its history", nothing, history_chat, chat_outcome, error_type,
         "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: r.headers["x-thread-id"])),
    Door("Responses, a first request", nothing, response, lambda r: r.json()["id"], error_type,
         "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: ResponseRef.parse(r.json()["id"]).thread)),
    Door("Responses, a resent conversation", nothing, resent_conversation, lambda r: r.json()["id"], error_type,
         "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: ResponseRef.parse(r.json()["id"]).thread)),
    Door("Responses, previous_response_id", a_response, next_response, lambda r: r.json()["id"], error_type,
         "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: ResponseRef.parse(r.json()["id"]).thread)),
    Door("Responses, previous_response_id of an earlier response (a fork)", an_earlier_response, next_response,
         lambda r: r.json()["id"], error_type, "409 idempotency_key_reused",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: ResponseRef.parse(r.json()["id"]).thread)),
    Door("A2A messageId", nothing, a2a_message, a2a_task, a2a_error,
         "-32602 this messageId was sent with another message: use a new messageId",
         lambda c, t, rs: turns_in_answers(c, t, rs, lambda r: r.json()["result"]["task"]["contextId"])),
]
RUNS_FOR_ONE = {"fork (POST /threads/{id}/fork)": 2,  # the turn it inherits, and its own
                "Responses, previous_response_id": 2,  # the response it continues, and its own
                "Responses, previous_response_id of an earlier response (a fork)": 2}  # as a fork's


async def refunds_once_replied(client: Client, t: Target) -> int:
    """The refunds of the target's order, once the approved turn has replied (the tool ran)."""
    async def replied() -> bool:
        status = await client.get_workflow_handle(t["thread"]).query(TeamWorkflow.status)
        return status.last_reply is not None and not status.pending
    await until(replied, "the approved turn's reply")
    return REFUNDS.count(t["order"])


async def test_every_door_holds_a_key_to_one_run(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    seen: dict[str, tuple[list[httpx.Response], list[httpx.Response], int, int]] = {}
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, cards=[card_of(DESK.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        for door in DOORS:
            target = await door.prepare(http, client)
            key = f"k-{uuid.uuid4().hex[:12]}"
            one_by_one = [await door.send(http, target, key, content) for content in ("a", "a", "b")]
            sequential_runs = await door.runs(client, target, one_by_one[:2])
            target = await door.prepare(http, client)
            key = f"k-{uuid.uuid4().hex[:12]}"
            at_once = list(await asyncio.gather(*(door.send(http, target, key, "a") for _ in range(3))))
            seen[door.name] = (one_by_one, at_once, sequential_runs, await door.runs(client, target, at_once))

    for door in DOORS:
        (first, again, other), at_once, sequential_runs, concurrent_runs = seen[door.name]
        one = RUNS_FOR_ONE.get(door.name, 1)
        assert first.status_code in (200, 201) and again.status_code == 200, (door.name, first.text, again.text)
        assert door.outcome(again) == door.outcome(first), door.name  # the first outcome, not a second run
        assert door.conflict(other) == door.expected_conflict, (door.name, other.text)
        assert sequential_runs == one, door.name
        assert all(r.status_code in (200, 201) for r in at_once), (door.name, [r.text for r in at_once])
        assert len({door.outcome(r) for r in at_once}) == 1, (door.name, [r.text for r in at_once])
        assert concurrent_runs == one, door.name  # sent three times at once: one run
    assert len(REFUNDS) == len(set(REFUNDS)) == 2  # the two approvals' refunds, each once; forks approve none


# ---- the same key, other content, sent at the same moment ------------------------------------------

INPUT_DOORS = [door for door in DOORS if door.name in {
    "native turn (POST /threads/{id}/turns)", "native answer (POST /threads/{id}/questions/{qid})",
    "chat with X-Thread-Id", "A2A messageId", "Responses, previous_response_id"}]


async def approve_in_words(http: httpx.AsyncClient, t: Target, key: str, content: str) -> httpx.Response:
    """An approval whose words are the content: "a" and "b" are two approvals (a denial would
    have the desk ask again, so "what ran" stays the refund, once)."""
    return await http.post(f"/threads/{t['thread']}/questions/{t['question']}", headers={"Idempotency-Key": key},
                           json={"approved": True, "text": f"go ahead ({content})"})


RACE_SEND = {"native answer (POST /threads/{id}/questions/{qid})": approve_in_words}


async def test_a_key_sent_with_other_content_at_once_runs_one(client: Client, task_queue: str) -> None:
    """For each door that sends an input into a running thread: the same key with content "a"
    and with content "b", twice each, all at once. One content is taken (its requests share one
    outcome), the other's requests get the door's conflict error, and one input ran."""
    REFUNDS.clear()
    seen: dict[str, tuple[list[httpx.Response], int]] = {}
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, cards=[card_of(DESK.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        for door in INPUT_DOORS:
            target = await door.prepare(http, client)
            key = f"k-{uuid.uuid4().hex[:12]}"
            send = RACE_SEND.get(door.name, door.send)
            sent = list(await asyncio.gather(*(send(http, target, key, c) for c in ("a", "b", "a", "b"))))
            seen[door.name] = (sent, await door.runs(client, target, [r for r in sent if door.conflict(r) == "ok"]))

    problems = {}  # every door's, so one run shows them all
    for door in INPUT_DOORS:
        sent, runs = seen[door.name]
        said = [door.conflict(r) for r in sent]
        taken = {n % 2 for n, r in enumerate(sent) if said[n] == "ok"}
        refused = [said[n] for n in range(len(sent)) if n % 2 not in taken]
        outcomes = {door.outcome(r) for n, r in enumerate(sent) if said[n] == "ok"}
        if len(taken) != 1 or refused != [door.expected_conflict] * 2 or len(outcomes) != 1 or runs != RUNS_FOR_ONE.get(door.name, 1):
            problems[door.name] = (runs, [r.text[:200] for r in sent])
    assert not problems, "\n".join(f"{name}: {runs} runs, {texts}" for name, (runs, texts) in problems.items())
    # one content taken (one outcome, one run), the other's two requests the conflict


async def test_a_turn_sent_by_an_earlier_release_is_found_by_a_retry(client: Client, task_queue: str) -> None:
    """A keyed turn that went in before the upgrade (its update named by its input id, not by
    the key) is found by a retry after it: the same text streams that turn, other text is a
    409, and the thread ran one turn."""
    key = f"k-{uuid.uuid4().hex[:12]}"
    keyed = hashlib.sha256(f"address:127.0.0.1\0{key}".encode()).hexdigest()[:32]  # caller_key, from 127.0.0.1
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, cards=[card_of(DESK.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]
        before = await submit_turn(client, thread, "hello", turn_id=content_id(keyed, "hello", ""))
        await before.reply()
        again = await keyed_turn(http, thread, "hello", key)
        other = await keyed_turn(http, thread, "hello there", key)
        runs = await turns_of(client, thread)
    done = again[1][-1]
    assert (again[0], done["type"], done["turn"], done["text"]) == (
        200, "done", 1, "I saw ['system:Help.', 'user:hello']"), again  # that turn, streamed again
    assert (other[0], other[1][0]["error"]["type"]) == (409, "idempotency_key_reused"), other
    assert runs == 1


async def test_a_response_continued_by_an_earlier_release_is_found_by_a_retry(client: Client, task_queue: str) -> None:
    """A keyed request continuing a response that went in before the upgrade (under the id named
    by the request, not by the key) is found by its retry after it: the same response, and the
    thread ran no turn again (else the retry would be a new turn, or a fork)."""
    key = f"k-{uuid.uuid4().hex[:12]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, cards=[card_of(DESK.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        previous = (await http.post("/v1/responses", json={"model": "desk", "input": "hello"})).json()["id"]
        thread = ResponseRef.parse(previous).thread
        request_id = hashlib.sha256(json.dumps(["", key, previous, "and then a"], sort_keys=True).encode()).hexdigest()
        before = await submit_turn(client, thread, "and then a", turn_id=input_id(thread, "responses", request_id),
                                   after_turns=1)  # as the earlier release sent it
        await before.reply()
        again = await next_response(http, {"response": previous}, key, "a")
        runs = await turns_of(client, thread)
    assert again.status_code == 200, again.text
    made = ResponseRef.parse(again.json()["id"])  # that turn's response: on the thread, not a fork's
    assert (made.thread, made.turn, again.json()["status"], runs) == (thread, 2, "completed", 2)
