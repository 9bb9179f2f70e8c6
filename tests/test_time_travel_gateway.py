"""The gateway's time travel routes: GET /threads/{id}/checkpoints, POST /threads/{id}/fork."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.send import send_turn
from durable_teams.gateway.core.scopes import Token
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import inbox_questions, running_gateway
from .time_travel_team import REFUNDS, execute_refund, support, support_model
from .waiting import pending_question

pytestmark = pytest.mark.workflow


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


async def test_checkpoints_and_a_fork_over_http(client: Client, task_queue: str) -> None:
    team = support()
    model = ScriptedModel(support_model)
    async with running_worker(client, task_queue, [team], model), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": team.spec.name})).json()["thread_id"]
        for text in ("refund A1", "hello"):
            await send_turn(client, thread, text)
        listed = await http.get(f"/threads/{thread}/checkpoints")
        end_of_1 = next(p for p in listed.json() if p["kind"] == "turn_end")
        body = {"at": end_of_1["id"], "message": "refund B2"}
        headers = {"Idempotency-Key": "fork-1"}
        first = await http.post(f"/threads/{thread}/fork", json=body, headers=headers)
        again = await http.post(f"/threads/{thread}/fork", json=body, headers=headers)
        fork_id = first.json()["thread_id"]
        reply = await send_turn(client, fork_id, "ok")
        status = (await http.get(f"/threads/{fork_id}")).json()
        bad_at = await http.post(f"/threads/{thread}/fork", json={"at": "nope.1"})
        inside = next(p for p in listed.json() if p["kind"] == "tool")
        in_turn = await http.post(f"/threads/{thread}/fork", json={"at": inside["id"], "message": "refund B2"})
        unknown_field = await http.post(f"/threads/{thread}/fork", json={"at": end_of_1["id"], "edit": "x"})
        no_thread = await http.get("/threads/no-such-thread/checkpoints")
        no_thread_fork = await http.post("/threads/no-such-thread/fork", json={})
    assert listed.status_code == 200 and [p["kind"] for p in listed.json()] == [
        "turn", "model", "tool", "model", "turn_end", "turn", "model", "turn_end"]
    assert end_of_1["description"] == "turn 1 ended (completed): done: refunded A1"
    assert first.status_code == 201 and again.status_code == 200
    assert again.json() == first.json() == {"thread_id": fork_id, "forked_from": f"{thread}@{end_of_1['id']}"}
    assert reply.turn == 3 and REFUNDS == {"A1": 1, "B2": 1}  # one fork, the edited turn ran once
    assert (status["forked_from"], status["team"]) == (f"{thread}@{end_of_1['id']}", team.spec.name)
    assert bad_at.status_code == 400 and bad_at.json()["error"]["type"] == "invalid_checkpoint"
    assert "is not a checkpoint of thread" in bad_at.json()["error"]["message"]
    assert in_turn.status_code == 400 and "inside a turn" in in_turn.json()["error"]["message"]
    assert unknown_field.status_code == 400 and "edit" in unknown_field.json()["error"]["message"]
    assert no_thread.status_code == 404 and no_thread_fork.status_code == 404


async def test_a_breakpoint_is_resumed_with_edited_arguments_over_http(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["tools"]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": team.spec.name})).json()["thread_id"]
        turn = asyncio.ensure_future(send_turn(client, thread, "refund A1"))
        question = await pending_question(client.get_workflow_handle(thread))
        listed = await inbox_questions(http, thread)  # (other tests' threads on the shared server may wait too)
        path = f"/threads/{thread}/questions/{question.question_id}"
        not_object = await http.post(path, json={"approved": True, "arguments": "[1]"})
        refused = [await http.post(path, json={"approved": True, "arguments": edited}) for edited in (
            {"order": 17}, {}, {"order": "A9", "reason": "late"}, {"order": "A9", "idempotency_key": "mine"})]
        still_open = [q["question_id"] for q in (await http.get("/questions")).json() if q["thread_id"] == thread]
        resumed = await http.post(path, json={"approved": True, "arguments": {"order": "A9"}})
        reply = await turn
    assert [(q["tool"], q["breakpoint"]) for q in listed] == [("execute_refund", True)]
    assert not_object.status_code == 400
    # edits the tool's parameters refuse: 400 naming the field, the tool not run, the question open
    assert [r.status_code for r in refused] == [400] * 4
    assert {r.json()["error"]["type"] for r in refused} == {"invalid_arguments"}
    messages = [r.json()["error"]["message"] for r in refused]
    assert messages[0].endswith("the edited arguments do not fit execute_refund: 'order': string expected, not 17")
    assert messages[1].endswith("'order': required, and missing")
    assert "'reason' is not a parameter of the tool" in messages[2]
    assert "'idempotency_key' is not a parameter of the tool" in messages[3]  # injected: not from outside
    assert still_open == [question.question_id]
    assert resumed.status_code == 200 and REFUNDS == {"A9": 1}  # then run once, with the good ones
    assert reply.text.endswith("before it ran.) refunded A9")


async def test_a_scoped_token_forks_only_its_own_threads_and_keeps_the_fork(client: Client, task_queue: str) -> None:
    team = support()
    tokens = [Token("tok-a", "shop"), Token("tok-b", "crm")]
    mine, theirs = {"Authorization": "Bearer tok-a"}, {"Authorization": "Bearer tok-b"}
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue, tokens=tokens) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": team.spec.name}, headers=mine)).json()["thread_id"]
        await send_turn(client, f"shop:{thread}", "hello")  # the workflow of shop's thread
        seen_by_other = await http.get(f"/threads/{thread}/checkpoints", headers=theirs)
        forked_by_other = await http.post(f"/threads/{thread}/fork", json={}, headers=theirs)
        forked = await http.post(f"/threads/{thread}/fork", json={}, headers=mine)
        fork_id = forked.json()["thread_id"]
        fork_seen = await http.get(f"/threads/{fork_id}", headers=mine)
        fork_hidden = await http.get(f"/threads/{fork_id}", headers=theirs)
    assert seen_by_other.status_code == 404 and forked_by_other.status_code == 404  # as for no thread
    assert forked.status_code == 201 and fork_seen.status_code == 200
    assert fork_hidden.status_code == 404  # the fork keeps the original's scope


@pytest.mark.slow
async def test_a_chain_of_forks_from_a_thread_id_of_the_longest_length_stays_readable(
        client: Client, task_queue: str) -> None:
    """Every id the gateway makes is one it accepts: forks (keyed and not) of a 200-character
    thread id, and forks of those forks, stay within the thread id rule, each its own thread,
    readable with its turns."""
    team = support()
    longest = "t" + "x" * 199
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        started = await http.post("/threads", json={"team": team.spec.name, "thread_id": longest})
        await send_turn(client, longest, "hello")
        chain, forks = longest, []
        for n in range(4):  # keyed forks (their id derived from the key), then plain ones
            headers = {"Idempotency-Key": f"chain-{n}"} if n % 2 == 0 else {}
            made = await http.post(f"/threads/{chain}/fork", json={}, headers=headers)
            assert made.status_code == 201, made.text
            chain = made.json()["thread_id"]
            forks.append(chain)
        again = await http.post(f"/threads/{forks[1]}/fork", json={}, headers={"Idempotency-Key": "chain-2"})
        reply = await send_turn(client, forks[-1], "still here")
        read = [await http.get(f"/threads/{fork}") for fork in forks]
        turns = [await http.get(f"/threads/{fork}/transcript") for fork in forks]
    assert started.status_code == 201
    assert all(len(fork) <= 200 for fork in forks) and len(set(forks)) == 4
    assert all(fork.startswith("txxx") and "-fork-" in fork for fork in forks)
    assert again.status_code == 200 and again.json()["thread_id"] == forks[2], again.text  # deterministic
    assert [r.status_code for r in read] == [200] * 4 and [t.status_code for t in turns] == [200] * 4
    assert reply.text == "support heard: still here" and reply.turn == 2
