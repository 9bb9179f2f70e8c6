"""Every route of the gateway behind the same guards, read from the app's own route list (a
route added later is covered without a line here): a foreign Host is 421, a cross-site
request 403, no token 401 (but the pages listed as public, with the reason), a state change
that is not JSON 415, a body over the limit 413, each a JSON error; and what passes the
guards, malformed or empty, is a 4xx JSON error or an answer, never a 500 or a stall."""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
import pytest
from starlette.routing import Mount, Route
from temporalio.client import Client

from durable_teams.gateway import create_app
from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.exposure import DELETABLE, LANGGRAPH, SERVED_METHODS
from durable_teams.gateway.core.team_cards import TeamCard

from .gateway_helpers import running_gateway

pytestmark = pytest.mark.workflow

TOKEN = "s3cret"
MAX_BODY = 4096
OPTIONS: dict[str, Any] = {"tokens": [TOKEN], "teams": ["echo"], "cards": [TeamCard("echo", "Echoes.", ())],
                           "limits": Limits(max_body=MAX_BODY)}
PUBLIC = {
    "/": "the inbox page: no data in it; the calls it makes carry the token a person types",
    "/inbox": "the same page",
    "/healthz": "a liveness probe for load balancers: says ok, nothing else",
}
"""Routes served without a token, and why. Any other route without a token is 401."""
JUNK = [b"not json", b"{}", b"[]", b"[{}]", b"null", b"1", b'"text"', b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "id": {}, "method": "GetTask", "params": {}}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}', b'{"jsonrpc": "2.0", "id": 1, "method": 5}']
"""Bodies each POST route gets past the guards: each a 4xx JSON error or an answer, never a 500
and never a traceback in the log."""
PARAMS = {"thread": "no-such-thread", "question": "no-such-question", "response": "resp_none", "model": "echo",
          "assistant": "echo", "run": "t1", "part": "graph", "rest": "/search",
          "cron": "langgraph-cron-none"}
"""What a path parameter is filled with (a route with another parameter fails the test until
it is added here)."""


def routes(client: Client, task_queue: str) -> list[tuple[str, str]]:
    """(method, concrete path) of every route the gateway serves, read from its app."""
    guard = create_app(client, task_queue=task_queue, **OPTIONS)
    found = []
    walked = [(route, "") for route in guard.app.routes]  # type: ignore[attr-defined]
    for mount in guard.app.routes:  # type: ignore[attr-defined]
        if isinstance(mount, Mount):  # the LangGraph door's, under its prefix
            walked += [(route, mount.path) for route in mount.routes]
    for route, prefix in walked:
        if isinstance(route, Mount):
            continue
        assert isinstance(route, Route), f"{route!r}: a kind of route this table does not walk yet"
        names = re.findall(r"{(\w+)(?::\w+)?}", route.path)
        assert set(names) <= set(PARAMS), f"{route.path}: add its parameters to PARAMS"
        path = prefix + re.sub(r"{(\w+)(?::\w+)?}", lambda m: PARAMS[m.group(1)], route.path)
        found += [(method, path) for method in sorted(route.methods or {"GET"})]
    return found


def unserved_answer(response: httpx.Response) -> bool:
    """The 5xx a client's request may get, each a JSON error saying why: 501 for an endpoint of
    the LangGraph Server API the door does not serve (naming it), 503 when no worker polls the
    queue to answer a thread's queries (a LangGraph thread search reads each thread it lists:
    the walk created one)."""
    kind = response.json()["error"]["type"]
    return (response.status_code, kind) in ((501, "unsupported"), (503, "no_worker"))


def is_json_error(response: httpx.Response, status: int | None = None) -> bool:
    if status is not None and response.status_code != status:
        return False
    if not 400 <= response.status_code < 500 or "application/json" not in response.headers.get("content-type", ""):
        return False
    if response.request.method == "HEAD":
        return True
    body = response.json()
    return isinstance(body, dict) and ("error" in body)


GATEWAY_LOGGERS = ("durable_teams.gateway", "durable_teams.client", "a2a", "mcp", "starlette",
                   "uvicorn", "sse_starlette")
"""Loggers of the gateway's stack: its own, the A2A and MCP SDKs, the web framework and server."""


@pytest.mark.slow  # every route and method of every door, against a gateway: 3-6 s
async def test_every_route_is_behind_the_guards(client: Client, task_queue: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    table = routes(client, task_queue)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    json_type = {"Content-Type": "application/json"}
    wrong: list[str] = []
    async with running_gateway(client, task_queue, **OPTIONS) as url, \
            httpx.AsyncClient(base_url=url, timeout=30) as http:
        async def expect(what: str, method: str, path: str, status: int, **kw: Any) -> None:
            response = await http.request(method, path, **kw)
            if not is_json_error(response, status):
                wrong.append(f"{method} {path} {what}: {response.status_code} {response.text[:120]!r}")

        for method, path in table:
            body = b"{}" if method == "POST" else None
            await expect("from a foreign Host", method, path, 421, content=body,
                         headers=auth | json_type | {"Host": "rebound.example"})
            public = path in PUBLIC and method in ("GET", "HEAD")
            if not public:
                await expect("from a cross-site Origin", method, path, 403, content=body,
                             headers=auth | json_type | {"Origin": "https://evil.example"})
                await expect("cross-site by Sec-Fetch-Site", method, path, 403, content=body,
                             headers=auth | json_type | {"Sec-Fetch-Site": "cross-site"})
                # a method no route of the path takes is 405 before anything else is looked at
                unserved = 405 if method not in SERVED_METHODS and not path.startswith((DELETABLE, LANGGRAPH)) else None
                await expect("without a token", method, path, unserved or 401, content=body, headers=json_type)
                await expect("with a wrong token", method, path, unserved or 401, content=body,
                             headers=json_type | {"Authorization": "Bearer not-it"})
            else:
                served = await http.request(method, path)
                if served.status_code != 200:
                    wrong.append(f"{method} {path}: public ({PUBLIC[path]}) but {served.status_code}")
            if method == "POST":
                await expect("as text/plain", method, path, 415, content=b"{}",
                             headers=auth | {"Content-Type": "text/plain"})
                await expect("as a form", method, path, 415, content=b"a=1",
                             headers=auth | {"Content-Type": "application/x-www-form-urlencoded"})
                await expect("over the size limit", method, path, 413, content=b"[" + b"1," * MAX_BODY + b"1]",
                             headers=auth | json_type)
                for junk in JUNK:
                    response = await http.post(path, content=junk, headers=auth | json_type)
                    if (response.status_code >= 500 and not unserved_answer(response)) or \
                            "json" not in response.headers.get("content-type", ""):
                        wrong.append(f"POST {path} {junk!r}: {response.status_code} {response.text[:120]!r}")
            elif method != "HEAD":
                response = await http.request(method, path, headers=auth)
                if response.status_code >= 500 and not unserved_answer(response):
                    wrong.append(f"{method} {path}: {response.status_code} {response.text[:120]!r}")
        for path in sorted(PUBLIC):
            if ("GET", path) not in table:
                wrong.append(f"{path} is listed as public but the gateway has no such route")

    assert len(table) > 20, table  # the walk found the routes (the A2A and MCP ones with them)
    assert {("POST", "/mcp"), ("POST", "/a2a/echo"), ("POST", "/threads/no-such-thread/fork")} <= set(table)
    assert "\n".join(wrong) == ""
    # what the gateway's own stack logged: a worker or client an earlier test of this process
    # left running may log errors of its own meanwhile (seen under xdist), not this test's
    tracebacks = [f"{r.name}: {r.getMessage()}" for r in caplog.records
                  if (r.exc_info or r.levelno >= logging.ERROR) and r.name.startswith(GATEWAY_LOGGERS)]
    assert tracebacks == []
