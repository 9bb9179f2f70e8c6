"""Tenancy as one concept (docs/architecture.md, "Tenants and users"), walked as a table: every door (native /threads,
/v1/chat/completions, /v1/responses, /a2a, /mcp) and every kind of state (threads, checkpoints
and forks, pending questions, Responses ids, A2A and MCP tasks, memories, cached tool results)
with two tenants (two gateway scopes) and two end users in each. Nothing of one tenant reaches
the other, and the refusal reads as "not found", the same as for an id that never was; one
user's memories never reach another user, in the tenant or outside it."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.memory import MEMORY_TOOLS
from durable_teams.memory.sqlite_store import SQLiteStore
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.messages import Message, ModelRequest

from .conftest import running_worker
from .door_clients import McpRpc, a2a_agent, a2a_message, a2a_send, refusal
from .gateway_helpers import running_gateway
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway, a worker, a few dozen turns

LOOKUPS: list[str] = []


@tool(idempotent=True, cache_seconds=300)
def lookup(q: str) -> str:
    """Look something up (counts its runs)."""
    LOOKUPS.append(q)
    return f"{q}: found on run {len(LOOKUPS)}"


def vault_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """remember X / recall / lookup Q / refund (asks a person); the tool's result is the answer."""
    last = messages[-1]
    if last["role"] == "tool":
        return say(last["content"])
    text = last["content"] or ""
    if text.startswith("remember "):
        return call("remember", text=text.removeprefix("remember "), key="secret")
    if text == "recall":
        return call("recall")
    if text.startswith("lookup "):
        return call("lookup", q=text.removeprefix("lookup "))
    if text == "refund":
        return call("ask_human", question="Which order?")
    return say(f"heard {text}")


VAULT = Swarm([Agent("keeper", "Keep secrets.", tools=[*MEMORY_TOOLS, lookup, "ask_human"])],
              name="vault").compile()
RUN = uuid.uuid4().hex[:6]  # scope names of this run's own: no other test's thread is in them
SHOP, CRM = f"shop{RUN}", f"crm{RUN}"
TOKENS = [Token("tok-a1", SHOP), Token("tok-a2", SHOP), Token("tok-b1", CRM), Token("tok-b2", CRM)]
WHO = {"A/u1": ("tok-a1", "u1"), "A/u2": ("tok-a1", "u2"), "B/u1": ("tok-b1", "u1")}
"""(token, end user) of each caller on the doors that carry a user field; on A2A and MCP the
caller's token is its user (tok-a2 is A's second user there)."""
TOKEN_USERS = {"A/u1": "tok-a1", "A/u2": "tok-a2", "B/u1": "tok-b1"}
NOTHING = "Nothing remembered."


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Doors:
    """Says `text` as a caller (`A/u1`, ...) through each door, on a new thread; returns the
    answer and what the door names the state by (thread, response id, task id)."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url

    async def native(self, who: str, text: str) -> tuple[str, str]:
        token, user = WHO[who]
        made = await self.http.post("/threads", json={"team": "vault", "user": user}, headers=bearer(token))
        thread = made.json()["thread_id"]
        sent = await self.http.post(f"/threads/{thread}/turns", json={"text": text}, headers=bearer(token))
        assert sent.status_code == 200, sent.text
        status = (await self.http.get(f"/threads/{thread}", headers=bearer(token))).json()
        return status["last_reply"]["text"], thread

    async def chat(self, who: str, text: str) -> tuple[str, str]:
        token, user = WHO[who]
        made = await self.http.post("/v1/chat/completions", headers=bearer(token), json={
            "model": "vault", "user": user, "messages": [{"role": "user", "content": text}]})
        assert made.status_code == 200, made.text
        return made.json()["choices"][0]["message"]["content"], made.headers["x-thread-id"]

    async def responses(self, who: str, text: str) -> tuple[str, str]:
        token, user = WHO[who]
        made = await self.http.post("/v1/responses", headers=bearer(token),
                                    json={"model": "vault", "input": text, "safety_identifier": user})
        assert made.status_code == 200, made.text
        said = [part["text"] for item in made.json()["output"] if item["type"] == "message"
                for part in item["content"] if part["type"] == "output_text"]
        return "".join(said), made.json()["id"]

    async def a2a(self, who: str, text: str) -> tuple[str, str]:
        task = await a2a_send(await a2a_agent(self.url, TOKEN_USERS[who], "vault"), a2a_message(text))
        return task.artifacts[0].parts[0].text, task.id

    async def mcp(self, who: str, text: str) -> tuple[str, str]:
        rpc = McpRpc(self.http, self.url, TOKEN_USERS[who], tasks=False)
        done = await rpc.call("tools/call", name="vault", arguments={"message": text})
        return done["content"][0]["text"], str(done.get("structuredContent", {}).get("thread_id", ""))


DOORS = ["native", "chat", "responses", "a2a", "mcp"]


async def memories_by_door(doors: Doors) -> dict[str, dict[str, str]]:
    """Each door: A/u1 remembers a secret, then A/u1, A/u2 and B/u1 recall (each on a new thread)."""
    found: dict[str, dict[str, str]] = {}
    for door in DOORS:
        say_as: Callable[[str, str], Awaitable[tuple[str, str]]] = getattr(doors, door)
        stored, _ = await say_as("A/u1", f"remember the {door} secret")
        found[door] = {"stored": stored}
        for who in ("A/u1", "A/u2", "B/u1"):
            found[door][who] = (await say_as(who, "recall"))[0]
    return found


async def not_found_by_b(http: httpx.AsyncClient, url: str, of_a: dict[str, str]) -> dict[str, Any]:
    """What tenant B gets for tenant A's state, beside what it gets for ids that never were."""
    b = bearer("tok-b1")
    thread, fork, response, missing = of_a["thread"], of_a["fork"], of_a["response"], f"vault-none-{RUN}"
    http_rows: dict[str, int] = {}
    for name, (method, path, body) in {
        "thread": ("GET", f"/threads/{thread}", None),
        "transcript": ("GET", f"/threads/{thread}/transcript", None),
        "turn": ("POST", f"/threads/{thread}/turns", {"text": "hello"}),
        "checkpoints": ("GET", f"/threads/{thread}/checkpoints", None),
        "fork it": ("POST", f"/threads/{thread}/fork", {}),
        "the fork": ("GET", f"/threads/{fork}", None),
        "question": ("POST", f"/threads/{of_a['asking']}/questions/{of_a['question']}", {"text": "4711"}),
        "response": ("GET", f"/v1/responses/{response}", None),
        "response input items": ("GET", f"/v1/responses/{response}/input_items", None),
        "continue the response": ("POST", "/v1/responses", {"model": "vault", "input": "hi",
                                                            "previous_response_id": response}),
    }.items():
        headers = b | ({"X-Thread-Id": body.pop("__thread")} if body and "__thread" in body else {})
        answer = await http.request(method, path, json=body, headers=headers)
        http_rows[name] = answer.status_code
    chat_b = await http.post("/v1/chat/completions", headers=b | {"X-Thread-Id": of_a["chat"]}, json={
        "model": "vault", "messages": [{"role": "user", "content": "recall"}]})  # B's own thread of that id
    listed = [q["thread_id"] for q in (await http.get("/questions", headers=b)).json()]
    a2a_b = await a2a_agent(url, "tok-b1", "vault")
    mcp_b = McpRpc(http, url, "tok-b1")
    return {
        "http": http_rows,
        "questions listed": of_a["asking"] in listed,
        "chat on its thread": (chat_b.status_code, chat_b.headers.get("x-thread-id"),
                               chat_b.json()["choices"][0]["message"]["content"] if chat_b.status_code == 200 else ""),
        "a2a task": (await refusal(a2a_b.get_task(pb.GetTaskRequest(id=of_a["a2a task"])))).replace(
            of_a["a2a task"].rpartition("::")[0], "X"),
        "a2a missing": (await refusal(a2a_b.get_task(pb.GetTaskRequest(id=f"{missing}::1")))).replace(missing, "X"),
        "mcp task": (await mcp_b.error("tasks/get", taskId=of_a["mcp task"]))["message"].replace(
            of_a["mcp task"], "X"),
        "mcp missing": (await mcp_b.error("tasks/get", taskId=f"{missing}::1"))["message"].replace(
            f"{missing}::1", "X"),
    }


async def state_of_a(http: httpx.AsyncClient, url: str, doors: Doors) -> dict[str, str]:
    """Tenant A's state of every kind: a thread and its fork, a question waiting, a response,
    a chat's thread, an A2A task and an MCP task."""
    a = bearer("tok-a1")
    _, thread = await doors.native("A/u1", "hello")
    fork = (await http.post(f"/threads/{thread}/fork", json={}, headers=a)).json()["thread_id"]
    asking = (await http.post("/threads", json={"team": "vault", "task": "refund"}, headers=a)).json()["thread_id"]

    async def asked() -> list[dict[str, Any]] | None:
        return [q for q in (await http.get("/questions", headers=a)).json() if q["thread_id"] == asking] or None
    questions = await until(asked, "the question waiting")
    _, response = await doors.responses("A/u1", "hello")
    _, chat = await doors.chat("A/u1", "hello there")
    _, a2a_task = await doors.a2a("A/u1", "hello")
    mcp_task = (await McpRpc(http, url, "tok-a1").call("tools/call", name="vault",
                                                    arguments={"message": "hello"}))["taskId"]
    return {"thread": thread, "fork": fork, "asking": asking, "question": questions[0]["question_id"],
            "response": response, "chat": chat, "a2a task": a2a_task, "mcp task": mcp_task}


async def test_no_tenant_reaches_another_and_no_user_another_users_memories(
        client: Client, task_queue: str, tmp_path: Path) -> None:
    LOOKUPS.clear()
    store = SQLiteStore(tmp_path / "memory.sqlite3")
    card = card_of(VAULT.spec)
    try:
        async with running_worker(client, task_queue, [VAULT], ScriptedModel(vault_script), memory=store), \
                running_gateway(client, task_queue, tokens=TOKENS, teams=["vault"], cards=[card]) as url, \
                httpx.AsyncClient(base_url=url, timeout=60) as http:
            doors = Doors(http, url)
            memories = await memories_by_door(doors)
            of_a = await state_of_a(http, url, doors)
            by_b = await not_found_by_b(http, url, of_a)
            own = {"fork": (await http.get(f"/threads/{of_a['fork']}", headers=bearer("tok-a2"))).status_code}
            cached = [(await doors.native(who, "lookup rates"))[0] for who in ("A/u1", "B/u1", "A/u2", "B/u1")]
            twin_chats = [(await doors.chat(who, "the same first words"))[1] for who in ("A/u1", "A/u2")]
            # out of later inboxes (the workflow of A's thread: core/tenant_ids.py)
            await client.get_workflow_handle(f"{SHOP}:{of_a['asking']}").terminate("test over")
    finally:
        await store.close()

    for door in DOORS:  # each door's user keeps their own memories, in their own tenant only
        # (the chat door's answers end with the thread's mark)
        assert memories[door]["stored"].startswith("Remembered (secret)."), door
        assert f"the {door} secret" in memories[door]["A/u1"], (door, memories[door])
        for other in ("A/u2", "B/u1"):  # another user of the tenant; the same user name in another
            assert memories[door][other].startswith(NOTHING) and "secret" not in memories[door][other], (
                door, other, memories[door])
    # every kind of A's state is "not found" for B, as for an id that never was
    assert by_b["http"] == dict.fromkeys(by_b["http"], 404), by_b["http"]
    assert not by_b["questions listed"]
    status, thread, said = by_b["chat on its thread"]  # a chat's X-Thread-Id is B's own id: a thread of its own
    assert (status, thread) == (200, of_a["chat"]) and said.startswith(NOTHING), by_b["chat on its thread"]
    assert by_b["a2a task"] == by_b["a2a missing"], by_b
    assert by_b["mcp task"] == by_b["mcp missing"], by_b
    assert own["fork"] == 200  # a tenant's tokens all see its state (its fork included)
    # a cached result is the tenant's: B runs the tool itself, A's second user reuses A's result
    assert cached[0] == "rates: found on run 1" and cached[1] == "rates: found on run 2"
    assert cached[2].startswith("rates: found on run 1\n\n[cached result from ")
    assert cached[3].startswith("rates: found on run 2\n\n[cached result from ")
    assert LOOKUPS == ["rates", "rates"]
    assert twin_chats[0] != twin_chats[1]  # two users' chats that open alike are two threads


async def test_an_operators_tenant_in_the_python_api_is_the_gateway_scope_of_that_name(
        client: Client, task_queue: str, tmp_path: Path) -> None:
    """`start_conversation(..., tenant=, user=)` (what the CLI's --tenant / --user pass): the
    conversation is the scope's (its tokens see it, another scope's do not) and speaks for the
    user (their memories, not another tenant's user of the same name)."""
    from durable_teams.client.start import start_conversation
    from durable_teams.workflows.state import ConversationInput

    store = SQLiteStore(tmp_path / "memory.sqlite3")

    async def run(tenant: str, user: str, task: str) -> tuple[str, str]:
        handle = await start_conversation(client, "vault", ConversationInput(team_name="vault", task=task),
                                          tenant=tenant, user=user, id=f"vault-api-{uuid.uuid4().hex[:8]}",
                                          task_queue=task_queue)
        return (await handle.result()).answer, handle.id

    try:
        async with running_worker(client, task_queue, [VAULT], ScriptedModel(vault_script), memory=store), \
                running_gateway(client, task_queue, tokens=TOKENS, teams=["vault"]) as url, \
                httpx.AsyncClient(base_url=url, timeout=60) as http:
            await Doors(http, url).native("A/u1", "remember the gateway secret")
            mine, thread = await run(SHOP, "u1", "recall")
            theirs, _ = await run(CRM, "u1", "recall")
            seen = {token: (await http.get(f"/threads/{thread}", headers=bearer(token))).status_code
                    for token in ("tok-a2", "tok-b1")}
            with pytest.raises(ValueError, match="a tenant's name is 1-64 letters"):
                await run("not a scope", "u1", "recall")
    finally:
        await store.close()
    assert "the gateway secret" in mine and theirs == NOTHING
    assert seen == {"tok-a2": 200, "tok-b1": 404}
