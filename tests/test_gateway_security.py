"""The gateway as an attacker and a careless client find it: only its own hosts, JSON bodies
and its own origins drive it; every malformed request is a 4xx JSON error that changes
nothing and logs no traceback; duplicates are 409; an Idempotency-Key returns the first
outcome; and every operator token sees every thread, as docs/gateway.md says (scoped tokens:
tests/test_gateway_scopes.py)."""

from __future__ import annotations

import asyncio
import logging
import uuid

import httpx
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.exposure import Exposure
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, GatedModel

pytestmark = pytest.mark.workflow

TEAMS = [TEAM.spec.name]


async def test_other_hosts_plain_bodies_and_other_origins_are_refused(client: Client, task_queue: str) -> None:
    exposure = Exposure.for_bind("127.0.0.1", origins=["https://app.example"])
    async with running_gateway(client, task_queue, teams=TEAMS, exposure=exposure) as url, \
            httpx.AsyncClient(base_url=url, timeout=30) as http:
        rebinding = await http.get("/questions", headers={"Host": "attacker.example"})
        plain = await http.post("/threads", content=b'{"team": "echo"}', headers={"Content-Type": "text/plain"})
        form = await http.post("/threads", content=b"team=echo",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        foreign = await http.post("/threads", json={"team": "echo"}, headers={"Origin": "http://evil.example"})
        cross = await http.post("/threads", json={"team": "echo"}, headers={"Sec-Fetch-Site": "cross-site"})
        listed = await http.post("/threads", json={"team": "echo"}, headers={"Origin": "https://app.example"})
        preflight = await http.options("/threads", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
        unlisted_preflight = await http.options("/threads", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        same = await http.post("/threads", json={"team": "echo"}, headers={"Origin": url})
        page = await http.get("/", headers={"Sec-Fetch-Site": "cross-site"})  # a link to the inbox
    assert rebinding.status_code == 421 and "attacker.example" in rebinding.json()["error"]["message"]
    assert "thread" not in rebinding.text
    assert (plain.status_code, form.status_code) == (415, 415)
    assert plain.json()["error"]["message"] == "the body must be JSON: add the header 'Content-Type: application/json'"
    assert (foreign.status_code, cross.status_code) == (403, 403)
    assert "access-control-allow-origin" not in foreign.headers
    assert listed.status_code == 201 and listed.headers["access-control-allow-origin"] == "https://app.example"
    assert preflight.status_code == 204 and "POST" in preflight.headers["access-control-allow-methods"]
    assert unlisted_preflight.status_code == 403
    assert same.status_code == 201
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert "'unsafe-inline'" not in policy
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "sessionStorage" in page.text and "localStorage" not in page.text


BAD_REQUESTS = [
    # (method, path, body bytes, expected status, words of the message)
    ("POST", "/threads", b"", 400, "empty"),
    ("POST", "/threads", b"\xff\xfe", 400, "UTF-8"),
    ("POST", "/threads", b"[1, 2]", 400, "JSON object"),
    ("POST", "/threads", b'{"team": ' + b"1" * 5000 + b"}", 400, "digits"),
    ("POST", "/threads", b"[" * 10_000 + b"]" * 10_000, 400, "levels deep"),
    ("POST", "/threads", b'{"team": NaN}', 400, "NaN"),
    ("POST", "/threads", b'{"team": "echo", "thread_id": "a/b"}', 400, "thread_id"),
    ("POST", "/threads", b'{"team": "echo", "thread_id": " lead"}', 400, "thread_id"),
    ("POST", "/threads", b'{"team": "echo", "thread_id": "nul\\u0000"}', 400, "thread_id"),
    ("POST", "/threads", b'{"team": "echo", "thread_id": "' + b"x" * 1200 + b'"}', 400, "thread_id"),
    ("POST", "/threads", b'{"team": 7}', 400, "'team'"),
    ("POST", "/threads/{thread}/turns", b'{"text": "hi", "sender": 5}', 400, "'sender'"),
    ("POST", "/threads/{thread}/turns", b'{"text": "bad \\udc80"}', 400, "surrogate"),
    ("POST", "/threads/{thread}/turns", b'{"text": "' + b"x" * 300_000 + b'"}', 413, "bytes"),
    ("POST", "/threads/{thread}/turns", b'{"text": 12}', 400, "'text'"),
    ("GET", "/threads/{thread}/events?start=abc", b"", 400, "'start'"),
    ("GET", "/threads/{thread}/events?start=-1", b"", 400, "'start'"),
    ("GET", "/threads/no-such-thread/events", b"", 404, "no thread no-such-thread"),
    ("GET", "/threads/" + "y" * 1100, b"", 400, "thread id"),
    ("POST", "/v1/chat/completions", b'{"model": "echo", "messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]}', 400, "text"),
    ("POST", "/v1/chat/completions", b'{"model": "echo", "messages": []}', 400, "messages"),
    ("POST", "/v1/chat/completions", b'{"model": "echo", "messages": [{"role": "user", "content": "x"}], "user": "\\udc80"}', 400, "surrogate"),
    ("POST", "/v1/chat/completions", b'{"model": "echo", "n": 2, "messages": [{"role": "user", "content": "x"}]}', 400, "'n'"),
]


async def test_malformed_requests_are_4xx_json_change_nothing_and_log_no_traceback(
        client: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with running_worker(client, task_queue, [TEAM], GatedModel()), \
            running_gateway(client, task_queue, teams=TEAMS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"sec-{uuid.uuid4().hex[:8]}"
        assert (await http.post("/threads", json={"team": "echo", "thread_id": thread})).status_code == 201
        answers = [await http.request(method, path.format(thread=thread), content=body,
                                      headers={"Content-Type": "application/json"})
                   for method, path, body, *_ in BAD_REQUESTS]
        status = await client.get_workflow_handle(thread).query(TeamWorkflow.status)
    for (method, path, _, code, words), response in zip(BAD_REQUESTS, answers, strict=True):
        assert response.status_code == code, (method, path, response.status_code, response.text[:200])
        assert response.headers["content-type"].startswith("application/json"), (path, response.headers)
        assert words.lower() in response.json()["error"]["message"].lower(), (path, response.text[:200])
    assert status.turns == 0 and status.queued_turns == 0  # nothing a refused request sent arrived
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


async def test_duplicates_are_409_and_an_idempotency_key_returns_the_first_thread(
        client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, teams=TEAMS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        wanted = f"dup-{uuid.uuid4().hex[:8]}"
        starts = await asyncio.gather(*(http.post("/threads", json={"team": "echo", "thread_id": wanted})
                                        for _ in range(20)))
        key = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
        first = await http.post("/threads", json={"team": "echo"}, headers=key)
        again = await http.post("/threads", json={"team": "echo"}, headers=key)
        other = await http.post("/threads", json={"team": "echo"}, headers={"Idempotency-Key": "another"})
    codes = sorted(r.status_code for r in starts)
    assert codes == [201] + [409] * 19
    assert all(r.json()["error"]["type"] == "already_exists" for r in starts if r.status_code == 409)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["thread_id"] == again.json()["thread_id"] != other.json()["thread_id"]


async def test_every_operator_token_sees_every_thread(client: Client, task_queue: str) -> None:
    """What the gateway docs' threat model says: operator tokens (every token declared as
    before scopes) tell callers from strangers only."""
    async with running_worker(client, task_queue, [TEAM], GatedModel()), \
            running_gateway(client, task_queue, teams=TEAMS, tokens=["alice", "bob"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        made = await http.post("/threads", json={"team": "echo"}, headers={"Authorization": "Bearer alice"})
        thread = made.json()["thread_id"]
        seen = await http.get(f"/threads/{thread}", headers={"Authorization": "Bearer bob"})
        stranger = await http.get(f"/threads/{thread}", headers={"Authorization": "Bearer eve"})
    assert made.status_code == 201
    assert seen.status_code == 200 and seen.json()["thread_id"] == thread
    assert stranger.status_code == 401
