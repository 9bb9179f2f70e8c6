"""The LangGraph door probed as an attacker and as an operator would: every malformed request
on every route is a 4xx JSON error naming what is wrong (never a 500, never a traceback in the
log); another tenant's threads, runs, crons and store items are not found; an id names one run
or none; of many runs sent at once with `multitask_strategy` "reject" one goes in; a client
that leaves a stream after its first byte leaves the run going, joinable, and no task behind;
a hundred runs at once are each answered once; a run created through one gateway is joined
through the next; and crons on a namespace where Temporal Schedules are disabled are refused
naming the cause, nothing half-created."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from langgraph_sdk import get_client
from temporalio.client import Client, ScheduleHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from durable_teams.examples import faang, support
from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.langgraph import langgraph_runs as runs_door
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import AWAITING_HUMAN
from durable_teams.workflows.labels import TASK, TEAM

from .conftest import binary, running_worker
from .gateway_helpers import running_gateway
from .waiting import NotYet, until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

SHOP, CRM = {"Authorization": "Bearer shop-secret"}, {"Authorization": "Bearer crm-secret"}
TOKENS = [Token("shop-secret", "shop"), Token("crm-secret", "crm")]
YEARLY = "0 0 1 1 *"


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def run(**fields: Any) -> dict[str, Any]:
    return {"assistant_id": "faang", "input": human("hi")} | fields


def cron(**fields: Any) -> dict[str, Any]:
    return {"assistant_id": "faang", "input": human("hi"), "schedule": YEARLY} | fields


# (caller, method, path, body (bytes: sent as they are), status, a part of the error's message).
# {th}: a faang thread of the caller "shop" that answered one run; {sup}: a support thread of
# "shop" waiting on its first question; {cron}: a cron of "shop" on {th}.
REFUSED: list[tuple[dict[str, str], str, str, Any, int, str]] = [
    # pages, filters and fields of the wrong type (were 500s)
    (SHOP, "POST", "/assistants/search", {"limit": "x"}, 400, "'limit' is a whole number"),
    (SHOP, "POST", "/assistants/search", {"offset": 1.5}, 400, "'offset' is a whole number"),
    (SHOP, "POST", "/assistants/search", {"limit": -1}, 400, "'limit' is a whole number from 1"),
    (SHOP, "POST", "/assistants/search", {"graph_id": 5}, 400, "'graph_id' is a string"),
    (SHOP, "POST", "/assistants/search", {"metadata": "x"}, 400, "'metadata' is an object"),
    (SHOP, "GET", "/threads/{th}/runs?limit=x", None, 400, "'limit' is a whole number"),
    (SHOP, "GET", "/threads/{th}/runs?offset=-1", None, 400, "'offset' is a whole number"),
    (SHOP, "GET", "/threads/{th}/runs?status=done", None, 400, "'status' is one of pending"),
    (SHOP, "POST", "/runs/crons/search", {"limit": "x"}, 400, "'limit' is a whole number"),
    (SHOP, "POST", "/runs/crons/search", {"offset": "x"}, 400, "'offset' is a whole number"),
    (SHOP, "POST", "/runs/crons/search", {"assistant_id": 5}, 400, "'assistant_id' is a string"),
    (SHOP, "POST", "/store/items/search", {"filter": "x"}, 400, "'filter' is an object"),
    (SHOP, "POST", "/store/items/search", {"query": 5}, 400, "'query' is a string"),
    (SHOP, "POST", "/store/namespaces", {"max_depth": "x"}, 400, "'max_depth' is a whole number"),
    (SHOP, "POST", "/store/namespaces", {"max_depth": -1}, 400, "'max_depth' is a whole number"),
    (SHOP, "POST", "/store/namespaces", {"limit": "x"}, 400, "'limit' is a whole number"),
    (SHOP, "PUT", "/store/items", {"namespace": ["a"], "key": 5, "value": {}}, 400, "'key' is a string"),
    (SHOP, "PUT", "/store/items", {"namespace": ["a.b"], "key": "k", "value": {}}, 400, "cannot contain periods"),
    (SHOP, "POST", "/threads/search", {"ids": "abc"}, 400, "'ids' is a list of thread ids"),
    (SHOP, "POST", "/threads/search", {"status": "nonsense"}, 400, "'status' is one of idle"),
    (SHOP, "POST", "/threads", {"thread_id": 5, "metadata": {"graph_id": "faang"}}, 400, "'thread_id' is a string"),
    (SHOP, "POST", "/threads", {"metadata": []}, 400, "'metadata' is an object"),
    (SHOP, "POST", "/threads/{th}/history", {"before": 5}, 400, "'before' is a checkpoint"),
    (SHOP, "POST", "/threads/{th}/history", {"before": {"checkpoint_id": ["a"]}}, 400, "'before' is a checkpoint"),
    (SHOP, "POST", "/threads/{th}/history", {"limit": True}, 400, "'limit' is a whole number"),
    # crons: a thread of another team (was a 500), fields the schedule would have ignored
    (SHOP, "POST", "/threads/{th}/runs/crons", cron(assistant_id="support"), 409, "belongs to team 'faang'"),
    (SHOP, "POST", "/runs/crons", cron(timezone=5), 400, "'timezone' is a string"),
    (SHOP, "POST", "/runs/crons", cron(enabled="x"), 400, "'enabled' is true or false"),
    (SHOP, "POST", "/runs/crons", cron(stream_mode="bogus"), 422, "stream_mode 'bogus'"),
    (SHOP, "POST", "/runs/crons", cron(schedule="61 * * * *"), 400, "Minute is not in range"),
    (SHOP, "POST", "/runs/crons", cron(schedule="@every 1s"), 422, "a cron here is five fields"),  # a thread a second
    (SHOP, "POST", "/runs/crons", cron(schedule="* * * * * * *"), 422, "seconds, @every and CRON_TZ"),
    (SHOP, "POST", "/threads/{th}/runs/crons", cron(schedule="CRON_TZ=UTC * * * * *"), 422, "five fields"),
    (SHOP, "POST", "/runs/crons", cron(timezone="Mars/Olympus"), 400, "unknown time zone"),
    (SHOP, "POST", "/runs/crons", cron(end_time="x"), 400, "'end_time' is an ISO 8601 time"),
    # an id names one run or none: no other spelling of t1, no question never asked this way
    (SHOP, "GET", "/threads/{th}/runs/t01", None, 404, "no run 't01'"),
    (SHOP, "GET", "/threads/{th}/runs/t1.q01", None, 404, "no run 't1.q01'"),
    (SHOP, "GET", "/threads/{th}/runs/t1.q0", None, 404, "no run 't1.q0'"),
    (SHOP, "GET", "/threads/{th}/runs/T1", None, 404, "no run 'T1'"),
    (SHOP, "GET", "/threads/{th}/runs/t1%20", None, 404, "no run 't1 '"),
    (SHOP, "GET", "/threads/{th}/runs/t2/join", None, 404, "no run t2"),
    (SHOP, "GET", "/threads/{th}%20/state", None, 400, "invalid thread id"),
    (SHOP, "GET", "/threads/%20{th}", None, 400, "invalid thread id"),
    # run requests: bodies, modes, strategies, commands
    (SHOP, "POST", "/threads/{th}/runs", b"\xff\xfe", 400, "not valid UTF-8"),
    (SHOP, "POST", "/threads/{th}/runs", b"[" * 5000, 400, "nests arrays or objects"),
    (SHOP, "POST", "/threads/{th}/runs", b'{"a": ' + b"9" * 5000 + b"}", 400, "over 100 digits"),
    (SHOP, "POST", "/threads/{th}/runs", b"[]", 400, "must be a JSON object"),
    (SHOP, "POST", "/threads/{th}/runs/wait",
     b'{"assistant_id": "faang", "input": {"messages": [{"role": "user", "content": "\\ud800"}]}}',
     400, "lone surrogate"),
    (SHOP, "POST", "/threads/{th}/runs", run(bogus=1), 422, "run parameter(s) bogus"),
    (SHOP, "POST", "/threads/{th}/runs/stream", run(stream_mode="nonsense"), 422, "stream_mode 'nonsense'"),
    (SHOP, "POST", "/threads/{th}/runs/stream", run(stream_mode={"a": 1}), 400, "'stream_mode' is a mode"),
    (SHOP, "POST", "/threads/{th}/runs", run(multitask_strategy="bogus"), 422, "multitask_strategy='bogus'"),
    (SHOP, "POST", "/threads/{th}/runs", run(multitask_strategy=["reject"]), 422, "multitask_strategy=['reject']"),
    (SHOP, "POST", "/threads/{th}/runs", run(if_not_exists="nope"), 422, "if_not_exists='nope'"),
    (SHOP, "POST", "/threads/{th}/runs", {"assistant_id": "faang", "command": "resume"}, 422, "a non-object"),
    (SHOP, "POST", "/threads/{th}/runs", {"assistant_id": "faang", "command": {"goto": "x"}}, 422, "command goto"),
    (SHOP, "POST", "/threads/{th}/runs", {"assistant_id": "faang", "command": {}}, 400, "needs 'resume'"),
    (SHOP, "POST", "/threads/{th}/runs/wait", {"assistant_id": "faang", "command": {"resume": "yes"}}, 409,
     "no interrupt waits"),
    (SHOP, "POST", "/threads/{sup}/runs/wait", {"assistant_id": "support", "command": {"resume": " "}}, 400,
     "resume with its answer as text"),
    (SHOP, "POST", "/threads/{th}/runs", run(assistant_id="support"), 409, "belongs to team 'faang'"),
    (SHOP, "POST", "/threads/{th}/runs", run(assistant_id="nobody"), 404, "no team 'nobody'"),
    (SHOP, "POST", "/threads/nothere/runs", run(), 404, "no thread nothere"),
    (SHOP, "GET", "/threads/{th}/runs/t1/stream?stream_mode=bogus", None, 422, "stream_mode 'bogus'"),
    (SHOP, "POST", "/threads/{th}/runs/t1/cancel?action=bogus", None, 422, "cancel action='bogus'"),
    # another tenant's things are not found
    (CRM, "GET", "/threads/{th}", None, 404, "no thread"),
    (CRM, "DELETE", "/threads/{th}", None, 404, "no thread"),
    (CRM, "POST", "/threads/{th}/copy", None, 404, "no thread"),
    (CRM, "POST", "/threads/{th}/history", {}, 404, "no thread"),
    (CRM, "GET", "/threads/{th}/runs/t1/join", None, 404, "no thread"),
    (CRM, "GET", "/threads/{th}/runs/t1/stream", None, 404, "no thread"),
    (CRM, "POST", "/threads/{th}/runs/t1/cancel?action=rollback", None, 404, "no thread"),
    (CRM, "POST", "/threads/{th}/runs", run(), 404, "no thread"),  # (with if_not_exists="create": a thread of its own)
    (CRM, "POST", "/threads/{sup}/runs/wait", {"assistant_id": "support", "command": {"resume": "4711"}}, 404,
     "no thread"),
    (CRM, "POST", "/threads/{th}/runs/crons", cron(), 404, "no thread"),
    (CRM, "DELETE", "/runs/crons/{cron}", None, 404, "no cron"),
    (CRM, "GET", "/store/items?namespace=mine&key=k", None, 404, "no item 'k'"),
]


def filled(path: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value)
    return path


async def sent(http: httpx.AsyncClient, method: str, path: str, body: Any, headers: dict[str, str]
               ) -> httpx.Response:
    if isinstance(body, bytes):
        return await http.request(method, path, content=body,
                                  headers=headers | {"Content-Type": "application/json"})
    return await http.request(method, path, json=body, headers=headers)


def faang_and_support() -> tuple[list[Any], ScriptedModel]:
    teams = [faang.build().compile(), support.build().compile()]
    return teams, ScriptedModel(teams={"faang": faang.SCRIPT, "support": support.SCRIPT})


async def test_malformed_and_foreign_requests_are_4xx_json_without_a_traceback(
        client: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    support.REFUNDS.clear()
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"], tokens=TOKENS) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            await lg.runs.wait(th, "faang", input=human(faang.QUESTION))
            sup = (await lg.threads.create(graph_id="support"))["thread_id"]
            await lg.runs.wait(sup, "support", input=human(support.QUESTION))
            made: Any = await lg.crons.create_for_thread(th, "faang", schedule=YEARLY, input=human("x"))
            await lg.store.put_item(["mine"], "k", {"a": 1})
            ids = {"th": th, "sup": sup, "cron": made["cron_id"]}
            answers = [await sent(http, method, filled(path, ids), body, headers)
                       for headers, method, path, body, _, _ in REFUSED]
            owner_sees = [(await sent(http, "GET", f"/threads/{th}", None, SHOP)).status_code,
                          (await sent(http, "GET", "/store/items?namespace=mine&key=k", None, SHOP)).status_code,
                          len((await sent(http, "POST", "/runs/crons/search", {}, SHOP)).json()),
                          [r["run_id"] for r in (await sent(http, "GET", f"/threads/{th}/runs", None, SHOP)).json()],
                          [t["thread_id"] for t in (await sent(http, "POST", "/threads/search",
                                                               {"ids": [th, *map(str, range(100_000))]}, SHOP)).json()]]
        transcript = await client.get_workflow_handle(f"shop:{th}").query(TeamWorkflow.transcript, False)

    wrong = []
    for (headers, method, path, _, status, words), answer in zip(REFUSED, answers, strict=True):
        message = answer.json()["error"]["message"] if answer.headers["content-type"] == "application/json" else ""
        if answer.status_code != status or words not in message:
            wrong.append(f"{method} {path} as {headers is CRM and 'crm' or 'shop'}: {answer.status_code} {answer.text[:200]}")
    assert wrong == []
    assert owner_sees == [200, 200, 1, ["t1"], [th]]
    assert sum(1 for m in transcript if m.role == "user") == 1  # not one refused run went in
    tracebacks = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info]
    assert tracebacks == []


def seen_together(monkeypatch: pytest.MonkeyPatch, requests: int) -> None:
    """The door's first read of the thread held until `requests` runs have all read it: each
    sees it idle before any goes in (the race, every time)."""
    barrier, read, reads = asyncio.Barrier(requests), runs_door.snapshot, Counter[str]()

    async def together(*args: Any) -> Any:
        seen = await read(*args)
        reads["all"] += 1
        if reads["all"] <= requests:  # the runs' first reads; later ones (their answers) pass
            await barrier.wait()
        return seen
    monkeypatch.setattr(runs_door, "snapshot", together)


async def test_of_runs_sent_at_once_with_reject_one_goes_in_and_one_resume_answers(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`multitask_strategy` "reject" on an idle thread: the first run in is taken, every other
    sent at the same moment is a 409 (was: queued behind it); of ten resumes of one interrupt
    one answers it, and the approval after it runs the refund once."""
    support.REFUNDS.clear()
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=120) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            sup = (await lg.threads.create(graph_id="support"))["thread_id"]
            seen_together(monkeypatch, 20)
            runs = await asyncio.gather(*[  # the run taken waits for an answer: the thread stays busy
                http.post(f"/threads/{sup}/runs", json=run(assistant_id="support", input=human(support.QUESTION)))
                for _ in range(20)])
            await lg.runs.join(sup, "t1")
            monkeypatch.undo()
            resumes = await asyncio.gather(*[
                http.post(f"/threads/{sup}/runs", json={"assistant_id": "support", "command": {"resume": f"Order 47{n}"}})
                for n in range(10)])
            await lg.runs.join(sup, "t1.q1")
            approvals = await asyncio.gather(*[
                http.post(f"/threads/{sup}/runs/wait", json={"assistant_id": "support", "command": {"resume": True}})
                for _ in range(10)])
        transcript = await client.get_workflow_handle(sup).query(TeamWorkflow.transcript, False)

    assert Counter(r.status_code for r in runs) == {200: 1, 409: 19}
    assert {r.json()["error"]["type"] for r in runs if r.status_code == 409} == {"thread_busy"}
    assert sum(1 for m in transcript if m.role == "user") == 1
    assert Counter(r.status_code for r in resumes) == {200: 1, 409: 9}
    assert Counter(r.status_code for r in approvals) == {200: 1, 409: 9}
    assert len(support.REFUNDS) == 1


def serving_tasks() -> list[str]:
    """The tasks of this process serving a request or a gateway's stream (none at rest)."""
    found = []
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        where = code.co_filename if code else ""
        if "durable_teams/gateway" in where or "uvicorn/protocols" in where:
            found.append(f"{code.co_name if code else '?'} ({where})")
    return found


async def test_runs_that_create_one_thread_at_once_make_it_once(client: Client, task_queue: str) -> None:
    """Ten runs at once with `if_not_exists="create"` on one new thread id: the thread is made
    once, one run goes in and the others are refused as a busy thread's (were 500s with a
    traceback: the thread had been made by another of them meanwhile)."""
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=120) as http:
            body = run(assistant_id="support", input=human(support.QUESTION), if_not_exists="create")
            runs = await asyncio.gather(*[http.post("/threads/made-at-once/runs", json=body) for _ in range(10)])
            await get_client(url=f"{url}/langgraph", api_key=None).runs.join("made-at-once", "t1")
        transcript = await client.get_workflow_handle("made-at-once").query(TeamWorkflow.transcript, False)

    assert Counter(r.status_code for r in runs) == {200: 1, 409: 9}, [r.text[:200] for r in runs]
    assert sum(1 for m in transcript if m.role == "user") == 1


async def test_a_stream_left_after_its_first_byte_runs_on_joinable_and_leaves_no_task(
        client: Client, task_queue: str) -> None:
    """The client leaves; the run goes on and is joined whole, by `join_stream` too (a
    Last-Event-ID that names no frame of it replays it whole; one past its end ends at once);
    a mode asked 20,000 times streams once;
    the gateway holds no task for the stream it left. A run created through one gateway is
    joined through the next."""
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            threads = [(await lg.threads.create(graph_id="faang"))["thread_id"] for _ in range(3)]
            for th in threads:
                async with http.stream("POST", f"/threads/{th}/runs/stream",
                                       json=run(input=human(faang.QUESTION), stream_mode=["values", "updates"])) as r:
                    first = await r.aiter_bytes().__anext__()
            joined = [await lg.runs.join(th, "t1") for th in threads]
            whole = [p async for p in lg.runs.join_stream(threads[0], "t1", stream_mode="values")]
            foreign = [p async for p in lg.runs.join_stream(threads[0], "t1", stream_mode="values",
                                                            last_event_id="not-a-frame")]
            past = [p async for p in lg.runs.join_stream(threads[0], "t1", stream_mode="values",
                                                         last_event_id=f"{10**12}.0")]

            many = (await lg.threads.create(graph_id="faang"))["thread_id"]
            async with http.stream("POST", f"/threads/{many}/runs/stream", json=run(
                    input=human(faang.QUESTION), stream_mode=["values"] * 20000, stream_resumable=True)) as r:
                location, repeated = r.headers["location"], await r.aread()

            async def streams_ended() -> bool:
                return not serving_tasks()
            await until(streams_ended, "the gateway's tasks for the streams ended")
            later = (await lg.threads.create(graph_id="faang"))["thread_id"]
            created = await lg.runs.create(later, "faang", input=human(faang.QUESTION))
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            after_restart = await lg.runs.join(later, created["run_id"])

    assert first.startswith(b"id: -1.0\nevent: metadata")
    assert [j["messages"][-1]["content"] for j in joined] == [faang.ANSWER] * 3
    assert [(p.id, p.data) for p in foreign] == [(p.id, p.data) for p in whole] and len(whole) == 13
    assert past == []
    # each mode once: the Location of a resumable stream stays a header (was 180,000 bytes: no client read it)
    assert location == f"/threads/{many}/runs/t1/stream?stream_mode=values"
    assert repeated.count(b"event: values") == len(whole) - 1
    assert after_restart["messages"][-1]["content"] == faang.ANSWER


async def test_a_wait_or_join_the_client_left_holds_nothing_in_the_gateway(client: Client, task_queue: str) -> None:
    """Runs queued behind a question may wait days: a client that leaves its `join` or `wait`
    leaves no task in the gateway (they were held, each with its wait, until the run
    ended, and held the gateway's shutdown); the runs go on and run once."""
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            sup = (await lg.threads.create(graph_id="support"))["thread_id"]
            await lg.runs.wait(sup, "support", input=human(support.QUESTION))
            await lg.runs.create(sup, "support", input=human("later"), multitask_strategy="enqueue")
            left = [asyncio.ensure_future(http.get(f"/threads/{sup}/runs/t2/join")) for _ in range(3)]
            left.append(asyncio.ensure_future(http.post(f"/threads/{sup}/runs/wait", json=run(
                assistant_id="support", input=human("later still"), multitask_strategy="enqueue"))))

            async def all_following() -> bool:  # each request follows its run (`followed`)
                return sum("to_its_end" in t for t in serving_tasks()) == 4
            await until(all_following, "the gateway follows the four runs")
            for request in left:
                request.cancel()  # the client leaves: its connection closes

            async def nothing_held() -> bool:
                if serving_tasks():
                    raise NotYet(serving_tasks())
                return True
            await until(nothing_held, "the gateway let go of the runs the client left", within=20)
        transcript = await client.get_workflow_handle(sup).query(TeamWorkflow.transcript, False)
        status = await client.get_workflow_handle(sup).query(TeamWorkflow.status)

    assert [m.content for m in transcript if m.role == "user"] == [support.QUESTION]  # the rest queued
    assert status.turns == 3 and [q.question_id for q in status.pending] == ["q1"]  # t2, t3 behind t1


async def test_a_hundred_runs_at_once_are_each_answered_once(client: Client, task_queue: str) -> None:
    """Streamed, waited and created-then-joined, a third each, on a hundred threads at once
    (the operator's limits allow them): every one answered, every thread holds one turn. The
    supervisor answers at once: what is under test is the door's hundred requests, not the
    team's nine model calls and five tools a run (other tests walk those), which made this
    test ten times the CPU."""
    teams, _ = faang_and_support()
    model = ScriptedModel(teams={"faang": {"supervisor": [say(faang.ANSWER)]}})
    limits = Limits(max_requests=300, max_followers=200)
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"], limits=limits) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            threads = [t["thread_id"] for t in await asyncio.gather(*[lg.threads.create(graph_id="faang")
                                                                       for _ in range(100)])]

            async def answered(n: int, th: str) -> str:
                if n % 3 == 0:
                    parts = [p async for p in lg.runs.stream(th, "faang", input=human(faang.QUESTION))]
                    return str(parts[-1].data["messages"][-1]["content"])
                if n % 3 == 1:
                    done: Any = await lg.runs.wait(th, "faang", input=human(faang.QUESTION))
                else:
                    created = await lg.runs.create(th, "faang", input=human(faang.QUESTION))
                    done = await lg.runs.join(th, created["run_id"])
                return str(done["messages"][-1]["content"])
            answers = await asyncio.gather(*[answered(n, th) for n, th in enumerate(threads)])
        turns = [sum(1 for m in await client.get_workflow_handle(th).query(TeamWorkflow.transcript, False)
                     if m.role == "user") for th in threads]

    assert answers == [faang.ANSWER] * 100
    assert turns == [1] * 100


@pytest_asyncio.fixture(scope="module")
async def no_schedules() -> AsyncIterator[Client]:
    """A dev server of the module's own whose namespace refuses Schedules, as an operator may
    set a cluster up (`frontend.enableSchedules` false)."""
    async with await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal"),
            search_attributes=[AWAITING_HUMAN, TEAM, TASK],
            dev_server_extra_args=["--dynamic-config-value", "frontend.enableSchedules=false"]) as env:
        yield env.client


async def test_crons_where_schedules_are_disabled_are_refused_naming_the_cause(
        no_schedules: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    teams, model = faang_and_support()
    async with running_worker(no_schedules, task_queue, teams, model):
        async with running_gateway(no_schedules, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            refused = [await http.post("/runs/crons", json=cron()),
                       await http.post(f"/threads/{th}/runs/crons", json=cron()),
                       await http.post("/runs/crons/search", json={}),
                       await http.delete("/runs/crons/langgraph-cron-0")]
            state: Any = await lg.threads.get(th)
        workflows = [w.id async for w in no_schedules.list_workflows(f"TaskQueue = '{task_queue}'")]

    assert [r.status_code for r in refused] == [501] * 4
    for answer in refused:
        error = json.loads(answer.text)["error"]
        assert "a cron is a Temporal Schedule" in error["message"], error
        assert "Schedules are disabled on this namespace" in error["message"], error
    assert state["status"] == "idle" and state["values"]["messages"] == []
    assert workflows == [th]  # nothing half-created: no cron's thread, no turn
    assert [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info] == []


async def test_a_cluster_with_updates_off_serves_runs_and_refuses_cancels_naming_the_cause(
        old_cluster: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    """Workflow updates turned off by the cluster's operator: runs go in (as signals) and are
    resumed; cancelling a run, or `multitask_strategy` "interrupt", takes an update: a 501 saying
    so (was a 502 of the server's words alone), and the refused run does not go in."""
    caplog.set_level(logging.INFO)
    support.REFUNDS.clear()
    teams, model = faang_and_support()
    async with running_worker(old_cluster, task_queue, teams, model):
        async with running_gateway(old_cluster, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            sup = (await lg.threads.create(graph_id="support"))["thread_id"]
            asked = await lg.runs.wait(sup, "support", input=human(support.QUESTION))
            cancelled = await http.post(f"/threads/{sup}/runs/t1/cancel")
            interrupting = await http.post(f"/threads/{sup}/runs", json=run(
                assistant_id="support", input=human("never mind"), multitask_strategy="interrupt"))
            approval: Any = await lg.runs.wait(sup, "support", command={"resume": "Order 4711"})
            done: Any = await lg.runs.wait(sup, "support", command={"resume": True})
        transcript = await old_cluster.get_workflow_handle(sup).query(TeamWorkflow.transcript, False)

    assert "__interrupt__" in asked and "__interrupt__" in approval
    for refused in (cancelled, interrupting):
        assert refused.status_code == 501, refused.text
        assert "it takes a workflow update" in refused.json()["error"]["message"]
        assert "frontend.enableUpdateWorkflowExecution" in refused.json()["error"]["message"]
    assert done["messages"][-1]["content"] == support.ANSWER and len(support.REFUNDS) == 1
    assert [m.content for m in transcript if m.role == "user"] == [support.QUESTION]
    assert [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info] == []


async def test_a_run_or_cron_the_server_took_is_answered_once_though_reading_it_back_fails(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn is taken (the schedule made), then the server fails to read it back (busy,
    unreachable): the run (the cron) is answered made, pending (without its next run), where
    it was a 503 for a run that had gone in: the client's retry ran it twice."""
    async def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise RPCError("the server is unreachable", RPCStatusCode.UNAVAILABLE, b"")
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            monkeypatch.setattr(ScheduleHandle, "describe", unreachable)
            monkeypatch.setattr(runs_door, "reply_of", unreachable)
            made: Any = await lg.crons.create("faang", schedule=YEARLY, input=human("weekly digest"))
            taken = await lg.runs.create(th, "faang", input=human(faang.QUESTION))
            monkeypatch.undo()
            listed = await lg.crons.search(assistant_id="faang")
            await lg.crons.delete(made["cron_id"])
            joined: Any = await lg.runs.join(th, taken["run_id"])
        transcript = await client.get_workflow_handle(th).query(TeamWorkflow.transcript, False)

    assert made["cron_id"].startswith("langgraph-cron-") and made["next_run_date"] is None
    assert [c["cron_id"] for c in listed] == [made["cron_id"]]
    assert (taken["run_id"], taken["status"]) == ("t1", "pending")
    assert joined["messages"][-1]["content"] == faang.ANSWER
    assert sum(1 for m in transcript if m.role == "user") == 1
