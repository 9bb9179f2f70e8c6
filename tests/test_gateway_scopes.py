"""Scoped tokens (issue 42, item 12): a scoped token sees only the threads started with its
scope, on every route (status, transcript, events, turns, answers, the inbox, chat by
`X-Thread-Id` and by resent history), with the same 404 as for a thread that does not exist
(a chat's `X-Thread-Id` is the caller's own id: another scope's starts its own thread);
an operator token sees every thread; the scope is kept in the thread's memo (never the secret),
so another gateway process enforces it too."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.cli import serve
from durable_teams.client.start import start_conversation
from durable_teams.gateway.core.scopes import (
    SCOPE_MEMO,
    Token,
    TokenError,
    check_tokens,
    operator_tokens,
    scoped_tokens,
    tokens_file,
)
from durable_teams.gateway.core.thread_marks import without_marks
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = pytest.mark.workflow

TOKENS = [Token("tok-a", "shop"), Token("tok-b", "crm"), Token("tok-op")]


# -- declaring tokens (pure) -------------------------------------------------------------------

def test_tokens_are_declared_in_the_environment_and_in_a_file(tmp_path: Path) -> None:
    assert operator_tokens(" t1, t2 ,") == [Token("t1"), Token("t2")]
    assert scoped_tokens("shop:s1, crm:s:2") == [Token("s1", "shop"), Token("s:2", "crm")]
    path = tmp_path / "tokens"
    path.write_text("# who may call\noperator op-1\nscoped shop s1  # the shop front end\n\nscoped shop s3\n")
    assert tokens_file(str(path)) == [Token("op-1"), Token("s1", "shop"), Token("s3", "shop")]
    assert check_tokens([Token("a"), Token("a")]) == [Token("a")]  # declared twice alike: once


@pytest.mark.parametrize(("declared", "why"), [
    ("shop", "no secret after the scope name 'shop'"),
    ("sh op:s1", "a scope name is 1-64 letters"),
    (":s1", "a scope name is 1-64 letters"),
])
def test_a_scoped_token_that_cannot_be_read_is_refused(declared: str, why: str) -> None:
    with pytest.raises(TokenError, match=why) as refused:
        scoped_tokens(declared)
    assert "s1" not in str(refused.value).replace("'sh op:s1'", "")  # the secret is never echoed


def test_a_bad_tokens_file_stops_serve_before_it_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens"
    path.write_text("operator op-1\nadmin s3cret\n")
    assert serve.main(["--tokens-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2: expected 'operator SECRET' or 'scoped NAME SECRET'" in err and "s3cret" not in err
    assert serve.main(["--tokens-file", str(tmp_path / "none")]) == 2
    with pytest.raises(TokenError, match="declared with two scopes"):
        check_tokens([Token("x", "shop"), Token("x")])
    assert "tok-a" not in repr(TOKENS[0])


# -- through the gateway ------------------------------------------------------------------------

def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def chat(text: str) -> dict[str, object]:
    return {"model": "desk", "messages": [{"role": "user", "content": text}]}


def hidden_requests(thread: str, question: str) -> list[tuple[str, str, dict[str, object] | None, dict[str, str]]]:
    """Every route that names a thread: (method, path, JSON body, headers)."""
    return [
        ("GET", f"/threads/{thread}", None, {}),
        ("GET", f"/threads/{thread}/transcript", None, {}),
        ("GET", f"/threads/{thread}/transcript?full=true", None, {}),
        ("GET", f"/threads/{thread}/events", None, {}),
        ("POST", f"/threads/{thread}/turns", {"text": "hello"}, {}),
        ("POST", f"/threads/{thread}/questions/{question}", {"approved": True}, {}),
        ("POST", f"/threads/{thread}/questions/{question}", {"text": "yes"}, {}),
    ]


async def until_done(client: Client, thread: str) -> str:
    handle = client.get_workflow_handle(thread)
    for _ in range(600):
        status = await handle.query(TeamWorkflow.status)
        if status.last_reply is not None and not status.pending:
            return status.last_reply.text
        await asyncio.sleep(0.05)
    raise AssertionError(f"{thread} did not answer")


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_scoped_token_sees_only_its_scopes_threads(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    mine = f"desk-shop-{uuid.uuid4().hex[:8]}"
    cli_thread = f"desk-cli-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        async with running_gateway(client, task_queue, tokens=TOKENS) as url, \
                httpx.AsyncClient(base_url=url, timeout=60) as http:
            for text in (FIRST, "Order 5"):  # tokA's thread, waiting on an approval
                asked = await http.post("/v1/chat/completions", json=chat(text),
                                        headers={**bearer("tok-a"), "X-Thread-Id": mine})
            assert asked.json()["choices"][0]["message"]["content"] == APPROVAL.replace("4711", "5")
            opened = await openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tok-a", max_retries=0
                                              ).chat.completions.with_raw_response.create(
                model="desk", messages=[{"role": "user", "content": FIRST}])
            chat_thread, said = opened.headers["x-thread-id"], opened.parse().choices[0].message.content or ""
            native = (await http.post("/threads", json={"team": "desk"}, headers=bearer("tok-a"))).json()["thread_id"]
            await start_conversation(client, "desk", ConversationInput(team_name="desk", single_turn=False),
                                     id=cli_thread, task_queue=task_queue)
        memo = await (await client.get_workflow_handle(f"shop:{mine}").describe()).memo()  # its own id
        question = (await client.get_workflow_handle(f"shop:{mine}").query(TeamWorkflow.status)).pending[0].question_id

        # another gateway process (a restart): the scope comes from the thread's memo
        async with running_gateway(client, task_queue, tokens=TOKENS) as url, \
                httpx.AsyncClient(base_url=url, timeout=60) as http:
            async def ask(token: str, thread: str, qid: str = question) -> list[httpx.Response]:
                return [await http.request(method, path, json=body, headers={**bearer(token), **headers})
                        for method, path, body, headers in hidden_requests(thread, qid)]
            never = f"desk-never-{uuid.uuid4().hex[:8]}"
            hidden = {thread: await ask("tok-b", thread) for thread in (mine, chat_thread, cli_thread, native)}
            chats_b = {thread: await http.post("/v1/chat/completions", json=chat("yes"),
                                               headers={**bearer("tok-b"), "X-Thread-Id": thread})
                       for thread in (mine, chat_thread, cli_thread, native)}
            hidden_from_a = await ask("tok-a", cli_thread)
            missing = await ask("tok-b", never)
            inbox = {token: (await http.get("/questions", headers=bearer(token))).json()
                     for token in ("tok-a", "tok-b", "tok-op")}
            resent = await http.post("/v1/chat/completions", headers=bearer("tok-b"), json={"model": "desk", "messages": [
                {"role": "user", "content": FIRST}, {"role": "assistant", "content": said},
                {"role": "user", "content": "Order 6"}]})
            seen = {(token, thread): (await http.get(f"/threads/{thread}", headers=bearer(token))).status_code
                    for token, ids in (("tok-a", (mine, native)), ("tok-op", (f"shop:{mine}", f"shop:{native}")))
                    for thread in (*ids, chat_thread)}  # an operator names workflows (a chat's is derived: raw)
            cli_seen = (await http.get(f"/threads/{cli_thread}/transcript", headers=bearer("tok-op"))).status_code
            approved = await http.post(f"/threads/shop:{mine}/questions/{question}", json={"approved": True},
                                       headers=bearer("tok-op"))
            done = await until_done(client, f"shop:{mine}")

    assert memo[SCOPE_MEMO] == "shop" and "tok-a" not in str(memo)  # the name, never the secret
    for thread, answers in [*hidden.items(), (cli_thread, hidden_from_a)]:
        for (method, path, *_), answer in zip(hidden_requests(thread, question), answers, strict=True):
            assert (answer.status_code, answer.json()) == (
                404, {"error": {"message": f"no thread {thread}", "type": "not_found"}}), (method, path, answer.text)
    for (method, path, *_), answer in zip(hidden_requests(never, question), missing, strict=True):
        assert (answer.status_code, answer.json()) == (
            404, {"error": {"message": f"no thread {never}", "type": "not_found"}}), (method, path, answer.text)
    # of this test's threads (other tests on this server use the scope "shop" too: a LangGraph
    # thread of one was listed when it ran first), the scope's inbox lists its own question alone
    ours = {mine, chat_thread, native, cli_thread}
    assert [q["thread_id"] for q in inbox["tok-a"] if q["thread_id"] in ours] == [mine]
    assert [q["thread_id"] for q in inbox["tok-b"] if q["thread_id"] in ours] == []  # "crm" is shared too
    assert f"shop:{mine}" in [q["thread_id"] for q in inbox["tok-op"]]
    for thread, answer in chats_b.items():  # tokB's X-Thread-Id: its own new thread of that id, never tokA's
        said_b = without_marks(answer.json()["choices"][0]["message"]["content"])
        assert (answer.status_code, answer.headers["x-thread-id"]) == (200, thread), answer.text
        assert said_b.startswith("I saw") and "Order 5" not in said_b and FIRST not in said_b, said_b
    # tokB resending tokA's chat (with its mark) gets a thread of its own, never tokA's
    assert resent.status_code == 200 and resent.headers["x-thread-id"] != chat_thread
    assert without_marks(resent.json()["choices"][0]["message"]["content"]).startswith("I saw")
    assert set(seen.values()) == {200} and cli_seen == 200
    assert approved.status_code == 200 and done == DONE and REFUNDS == ["5"]  # tokB's approvals did nothing
    assert without_marks(said) == ASKED


def test_serve_reads_tokens_from_the_environment_and_the_file_together(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokens"
    path.write_text("scoped crm c1\noperator op-2\n")
    monkeypatch.setenv("DURABLE_TEAMS_GATEWAY_TOKENS", "op-1")
    monkeypatch.setenv("DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS", "shop:s1")
    assert serve.all_tokens(str(path)) == [Token("op-1"), Token("s1", "shop"), Token("c1", "crm"), Token("op-2")]
    monkeypatch.setenv("DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS", "shop:op-1")
    with pytest.raises(TokenError, match="declared with two scopes"):
        serve.all_tokens(None)
    # scoped tokens alone are tokens: serve starts off loopback with them
    assert serve.check_exposure("0.0.0.0", [Token("s1", "shop")]) is None
    assert "DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS" in (serve.check_exposure("0.0.0.0", []) or "")
