"""The gateway where a request meets a thread in another state than it expects: a thread whose
conversation has ended (409 from every endpoint that writes to it, never a 404; a chat client
without a thread header goes on in a new thread), a thread of another team named with a reused
`Idempotency-Key` (409), a streamed chat completion past the caller's `--max-followers` (429
before any turn goes in), and a message sent again while the approval its own turn raised is
waiting (the same question again, never the approval)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.approvals import ask_again
from durable_teams.gateway.core import resent_threads as chat_threads
from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.thread_marks import mark_line
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest

from .conftest import running_worker
from .gateway_helpers import running_gateway, sse_events, streamed_content
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, GatedModel, desk_script

pytestmark = pytest.mark.workflow

ZAPPED: list[str] = []


@tool(needs_approval=True)
def zap(env: str) -> str:
    """Wipe an environment (a person approves it first)."""
    ZAPPED.append(env)
    return f"zapped {env}"


def ops_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """Zaps each environment the turn's message names after "zap ", one approval each."""
    turn = max(i for i, m in enumerate(messages) if m["role"] == "user")
    text = messages[turn]["content"]
    if "zap " not in text:
        return say(f"heard: {text}")
    envs = text.split("zap ", 1)[1].split()
    done = [m["content"] for m in messages[turn:] if m["role"] == "tool"]
    return call("zap", env=envs[len(done)]) if len(done) < len(envs) else say("done: " + ", ".join(done))


OPS = Swarm([Agent("ops", "Operate.", tools=[zap])], name="ops").compile()
ECHO = Swarm([Agent("echo", "Echo.")], name="echo").compile()


def chat(team: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"model": team, "messages": [{"role": "user", "content": text}], **fields}


def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["type"]


async def test_every_write_to_an_ended_thread_is_a_409(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [ECHO], ScriptedModel(lambda r, m, t: say("ok"))), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        started = await http.post("/threads", json={"team": "echo", "task": "one task"})
        thread = started.json()["thread_id"]
        await client.get_workflow_handle(thread).result()
        named = {"X-Thread-Id": thread}
        writes = [
            await http.post(f"/threads/{thread}/questions/q1", json={"text": "an answer"}),
            await http.post(f"/threads/{thread}/questions/q1", json={"approved": True}),
            await http.post(f"/threads/{thread}/turns", json={"text": "more"}),
            await http.post("/v1/chat/completions", headers=named, json=chat("echo", "more")),
            await http.post("/v1/chat/completions", headers=named, json=chat("echo", "more", stream=True)),
        ]
        missing = await http.post("/threads/echo-never-was/questions/q1", json={"text": "an answer"})

    assert [error_of(r) for r in writes] == [(409, "conversation_ended")] * 5
    assert f"thread {thread} has ended (COMPLETED)" in writes[0].json()["error"]["message"]
    assert error_of(missing) == (404, "not_found")
    assert missing.json()["error"]["message"] == "no thread echo-never-was"


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_chat_whose_thread_ended_after_it_was_found_goes_on_in_a_new_one(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat client (no thread header) whose thread ends between the lookup and its answer (the
    visibility store still lists it running, say) gets a new thread, as one that ended before."""
    first = f"{FIRST} ({uuid.uuid4().hex[:8]})"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        opened = await http.post("/v1/chat/completions", json=chat("desk", first))
        thread = opened.headers["x-thread-id"]
        seen = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
        await client.get_workflow_handle(thread).terminate("ended meanwhile")
        find_thread, stale = chat_threads.find_thread, [chat_threads.Match(thread, seen)]

        async def found_before_it_ended(*args: Any, **kwargs: Any) -> chat_threads.Match | None:
            return stale.pop() if stale else await find_thread(*args, **kwargs)
        monkeypatch.setattr(chat_threads, "find_thread", found_before_it_ended)
        answered = await http.post("/v1/chat/completions", json={"model": "desk", "messages": [
            {"role": "user", "content": first}, {"role": "assistant", "content": ASKED},
            {"role": "user", "content": "Order 4711"}]})

    assert opened.json()["choices"][0]["message"]["content"] == ASKED + mark_line(thread) and stale == []
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-thread-id"] not in (thread, None)
    assert answered.json()["choices"][0]["message"]["content"] == (
        f"I saw {['system:Help.', f'user:{first}', f'assistant:{ASKED}', 'user:Order 4711']}"
        + mark_line(answered.headers["x-thread-id"]))  # a new thread: its first answer


async def test_a_reused_idempotency_key_naming_another_team_is_a_409(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url) as http:
        thread = f"echo-keyed-{uuid.uuid4().hex[:8]}"
        key = {"Idempotency-Key": f"k-{thread}"}
        first = await http.post("/threads", headers=key, json={"team": "echo", "thread_id": thread})
        other = await http.post("/threads", headers=key, json={"team": "ops", "thread_id": thread})
        same = await http.post("/threads", headers=key, json={"team": "echo", "thread_id": thread})
        chat_other = await http.post("/v1/chat/completions", headers={**key, "X-Thread-Id": thread},
                                     json=chat("ops", "hello"))
        status = await client.get_workflow_handle(thread).describe()
        await client.get_workflow_handle(thread).terminate("test over")

    assert (first.status_code, same.status_code) == (201, 200)
    assert same.json() == {"thread_id": thread, "team": "echo"}
    assert error_of(other) == (409, "team_mismatch")
    assert other.json()["error"]["message"] == f"thread {thread} belongs to team 'echo', not 'ops'"
    assert error_of(chat_other) == (400, "invalid_request_error")  # OpenAI's: the model is wrong
    assert chat_other.json()["error"]["message"] == f"thread {thread} belongs to team 'echo', not 'ops'"
    assert (await status.memo())["team"] == "echo"


async def test_a_streamed_chat_completion_counts_as_a_follower(client: Client, task_queue: str) -> None:
    model = GatedModel()
    async with running_worker(client, task_queue, [ECHO], model), \
            running_gateway(client, task_queue, limits=Limits(max_followers=1)) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread, refused_thread = f"echo-follow-{uuid.uuid4().hex[:8]}", f"echo-refused-{uuid.uuid4().hex[:8]}"
        chat_team = f"nobody{uuid.uuid4().hex[:8]}"  # a chat without a thread header: its own family
        async with http.stream("POST", "/v1/chat/completions", headers={"X-Thread-Id": thread},
                               json=chat("echo", "first", stream=True)) as held:
            frames = sse_events(held)
            await anext(frames)  # the turn is in, its stream held open by the gated model
            over = [await http.post("/v1/chat/completions", headers=headers, json=chat(team, "second", stream=True),
                                    timeout=10)
                    for team, headers in (("echo", {"X-Thread-Id": refused_thread}),
                                          ("echo", {"X-Thread-Id": thread}), (chat_team, {}))]
            follower = await http.get(f"/threads/{thread}/events")
            model.gate.set()
            rest = [frame async for frame in frames]
        plain = await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread}, json=chat("echo", "third"))
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
        refused_started = [wf.id async for wf in client.list_workflows(f'WorkflowId = "{refused_thread}"')]
        chats_started = [wf.id async for wf in client.list_workflows(f'WorkflowId STARTS_WITH "{chat_team}-"')]
        await client.get_workflow_handle(thread).terminate("test over")

    assert held.status_code == 200 and rest[-1] == ("", "[DONE]")
    for response in (*over, follower):
        assert error_of(response) == (429, "rate_limit_exceeded") and response.headers["retry-after"] == "1"
        assert response.json()["error"]["message"] == "too many open streams for this caller; try again later"
    assert plain.status_code == 200  # not streamed: a request, not a follower
    assert status.turns == 2  # "first" and "third": nothing of the refused requests went in
    assert refused_started == [] and chats_started == []


def approve(env: str) -> str:
    return f'[ops] Approve zap({{"env": "{env}"}})? Reply yes or no.'


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_message_sent_again_while_its_own_approval_waits_is_not_the_approval(
        client: Client, task_queue: str) -> None:
    ZAPPED.clear()
    REFUNDS.clear()
    model = ScriptedModel(lambda r, m, t: (desk_script if r.agent == "desk" else ops_script)(r, m, t))
    async with running_worker(client, task_queue, [OPS, DESK], model), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:

        async def say_(thread: str, text: str, team: str = "ops", key: str | None = None, **fields: Any) -> str:
            response = await http.post("/v1/chat/completions", json=chat(team, text, **fields), headers={
                "X-Thread-Id": thread, **({"Idempotency-Key": key} if key else {})})
            assert response.status_code == 200, response.text
            if fields.get("stream"):
                return streamed_content(response)
            return str(response.json()["choices"][0]["message"]["content"])

        prod = f"ops-resent-{uuid.uuid4().hex[:8]}"
        resent = [await say_(prod, "yes, zap prod", **extra) for extra in ({}, {}, {"stream": True})]
        zapped_before = list(ZAPPED)
        approved = await say_(prod, "yes")

        mentioned = f"ops-mention-{uuid.uuid4().hex[:8]}"
        by_mention = [await say_(mentioned, "@ops yes, zap test") for _ in range(2)]
        by_endpoint = await http.post(f"/threads/{mentioned}/questions/q1", json={"approved": True})
        after = await say_(mentioned, "and then?")  # a turn queued behind it: answered after it

        keyed = f"ops-keyed-{uuid.uuid4().hex[:8]}"  # a new Idempotency-Key: a new message, the approval
        by_key = [await say_(keyed, "yes, zap k8s", key=key) for key in ("k1", "k2")]
        by_key.append(await say_(keyed, "yes", key="k3"))  # "yes, zap k8s" is no plain yes: asked again

        twice = f"ops-twice-{uuid.uuid4().hex[:8]}"
        yes_twice = [await say_(twice, text) for text in ("zap dev qa", "yes", "yes")]

        answered = f"desk-answered-{uuid.uuid4().hex[:8]}"  # the answer that led to the approval
        by_answer = [await say_(answered, text, "desk") for text in (FIRST, "yes 4711", "yes 4711", "yes")]

        asked = f"desk-resent-{uuid.uuid4().hex[:8]}"
        plain = [await say_(asked, FIRST, "desk") for _ in range(2)]
        for thread in (mentioned, asked):
            await client.get_workflow_handle(thread).terminate("test over")

    assert resent == [approve("prod")] * 3 and zapped_before == []
    assert approved == "done: zapped prod"
    assert by_mention == [approve("test")] * 2  # the thread logs the turn without its @ops
    assert by_endpoint.status_code == 200 and after == "heard: and then?"
    # a second approval, answered with the words that answered the first: not the turn's
    assert yes_twice == [approve("dev"), approve("qa"), "done: zapped dev, zapped qa"]
    assert by_key == [approve("k8s"), f"{ask_again('zap')} {approve('k8s')}", "done: zapped k8s"]
    assert ZAPPED == ["prod", "test", "k8s", "dev", "qa"]
    assert by_answer == [ASKED, APPROVAL, APPROVAL, DONE] and REFUNDS == ["4711"]
    # a plain question is answered by whatever comes next, the turn's own words included
    assert plain == [ASKED, '[desk] Approve refund({"order": "refund"})? Reply yes or no.']


async def test_an_idempotency_key_stands_for_one_request(client: Client, task_queue: str) -> None:
    """Without a thread_id the keyed thread's id is the team's and the key's: the same key for
    another team, or with another task, is another request (409), not a second thread or a
    200 that drops the new task; the same request again is the first's thread (200)."""
    async with running_gateway(client, task_queue, teams=["echo", "ops"]) as url, \
            httpx.AsyncClient(base_url=url) as http:
        key = {"Idempotency-Key": f"k-{uuid.uuid4().hex[:8]}"}
        first = await http.post("/threads", headers=key, json={"team": "echo", "task": "hello"})
        again = await http.post("/threads", headers=key, json={"team": "echo", "task": "hello"})
        other_team = await http.post("/threads", headers=key, json={"team": "ops", "task": "hello"})
        other_task = await http.post("/threads", headers=key, json={"team": "echo", "task": "bye"})
        thread = first.json()["thread_id"]
        await client.get_workflow_handle(thread).terminate("test over")
    assert (first.status_code, again.status_code, again.json()["thread_id"]) == (201, 200, thread)
    assert error_of(other_team) == (409, "team_mismatch")
    assert other_team.json()["error"]["message"] == (
        f"this Idempotency-Key started thread {thread} of another team: use a new key")
    assert error_of(other_task) == (409, "idempotency_key_reused")
