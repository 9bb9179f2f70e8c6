"""What an attacker's probe of the LangGraph door found left, held: an id names one thing or
none (a run `t1.qN` of a question never asked, a checkpoint in another spelling), a cron that
would never fire is refused naming its schedule, a run's webhook whose watcher fails to start
is not an error for a run that went in (it is retried, and shown), and "interrupt" runs sent
at once each interrupt the ones before them. Through the real `langgraph-sdk` and raw HTTP."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.examples import faang, support
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.langgraph import langgraph_webhooks as webhooks
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .teams import TEAM, GatedModel
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TOKENS = [Token("shop-secret", "shop"), Token("crm-secret", "crm")]
CRM = {"Authorization": "Bearer crm-secret"}


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def faang_and_support() -> tuple[list[Any], ScriptedModel]:
    teams = [faang.build().compile(), support.build().compile()]
    return teams, ScriptedModel(teams={"faang": faang.SCRIPT, "support": support.SCRIPT})


def error_of(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]["message"] if answer.status_code >= 400 else ""


async def test_a_question_never_asked_names_no_run_and_a_checkpoint_has_one_spelling(
        client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            await lg.runs.wait(th, "faang", input=human(faang.QUESTION))
            sup = (await lg.threads.create(graph_id="support"))["thread_id"]
            await lg.runs.wait(sup, "support", input=human(support.QUESTION))
            await lg.runs.wait(sup, "support", command={"resume": "Order 4711"})  # t1.q1: the approval q2 waits
            runs = [error_of(await http.get(f"/threads/{thread}/runs/{run_id}"))
                    for thread, run_id in ((th, "t1.q1"), (sup, "t1.q1"), (sup, "t1.q2"), (sup, "t1.q3"))]
            joined = (await http.get(f"/threads/{th}/runs/t1.q1/join")).status_code
            history = await lg.threads.get_history(th, limit=40)
            start = next(s for s in history if s["values"]["messages"]
                         and s["values"]["messages"][-1]["content"] == faang.QUESTION)
            point, question = start["checkpoint"]["checkpoint_id"], start["values"]["messages"][-1]
            spellings = [f" {point}", f"{point} ", point.upper(), point.replace(".", ".0", 1),
                         point.translate(str.maketrans("0123456789", "０１２３４５６７８９")), f"{point}+edit"]
            edits = [await http.post(f"/threads/{th}/state", json={
                "values": {"messages": [{**question, "content": "x"}]}, "checkpoint_id": spelled})
                for spelled in spellings]
            state: Any = await lg.threads.get_state(th)

    assert runs == [(404, f"no run t1.q1 on thread {th}: no answer to an interrupt q1 of run t1 started one"),
                    (200, ""),  # answered: the run its answer started
                    (404, f"no run t1.q2 on thread {sup}: interrupt q2 waits for its answer"),
                    (404, f"no run t1.q3 on thread {sup}: no answer to an interrupt q3 of run t1 started one")]
    assert joined == 404
    assert [error_of(e) for e in edits] == [(404, f"no checkpoint {s!r} on thread {th}: list them with threads.get_history") for s in spellings]
    assert state["checkpoint"]["checkpoint_id"] is None  # no update kept


async def test_a_cron_that_would_never_fire_is_refused_naming_its_schedule(client: Client, task_queue: str) -> None:
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            cron = {"assistant_id": "faang", "input": human("report")}
            refused = [error_of(await http.post("/runs/crons", json=cron | {"schedule": "0 0 30 2 *"})),
                       error_of(await http.post(f"/threads/{th}/runs/crons", json=cron | {"schedule": "0 9 31 4,6 1"})),
                       error_of(await http.post("/runs/crons", json=cron | {
                           "schedule": "0 0 1 1 *", "end_time": "2020-01-01T00:00:00+00:00"}))]
            left = await lg.crons.search()

    assert refused == [
        (422, "schedule '0 0 30 2 *' never fires: its days of the month fall in none of its months"),
        (422, "schedule '0 9 31 4,6 1' never fires: its days of the month fall in none of its months"),
        (422, "schedule '0 0 1 1 *' never fires before its end_time '2020-01-01T00:00:00+00:00'")]
    assert left == []  # nothing made, nothing left behind


async def test_a_webhook_watcher_that_fails_to_start_is_retried_then_shown_and_the_run_is_kept(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run went in: the watcher's start is tried again (the webhook then delivered once);
    failing still, the run is answered as made, with the failure on it and in the log (it was
    an error: the client's retry ran the run twice)."""
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_POLL_SECONDS", "0.05")
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_WATCH_RETRY_SECONDS", "0.001")
    start, failures = Client.start_workflow, Counter[str]()

    async def flaky(self: Client, workflow: Any, *args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("id", "")).startswith("langgraph-webhook-") and failures["left"] > 0:
            failures["left"] -= 1
            failures["failed"] += 1
            raise RPCError("the server is unreachable", RPCStatusCode.UNAVAILABLE, b"")
        return await start(self, workflow, *args, **kwargs)
    monkeypatch.setattr(Client, "start_workflow", flaky)
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang"]) as url, receiving() as receiver, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create(graph_id="faang"))["thread_id"]
            failures["left"] = webhooks.WATCH_ATTEMPTS - 1  # the last try starts it
            retried: Any = await lg.runs.create(th, "faang", input=human(faang.QUESTION), webhook=receiver.url)

            async def delivered() -> list[Any]:
                return receiver.accepted()
            bodies = await until(delivered, "the webhook delivered")
            await lg.runs.join(th, retried["run_id"])
            failures["left"] = 2 * webhooks.WATCH_ATTEMPTS  # every try fails, for two runs
            other = (await lg.threads.create(graph_id="faang"))["thread_id"]
            unwatched: Any = await lg.runs.create(other, "faang", input=human(faang.QUESTION), webhook=receiver.url)
            joined: Any = await lg.runs.join(other, unwatched["run_id"])
            third = (await lg.threads.create(graph_id="faang"))["thread_id"]
            waited = await http.post(f"/threads/{third}/runs/wait", json={
                "assistant_id": "faang", "input": human(faang.QUESTION), "webhook": receiver.url})
        transcripts = [await client.get_workflow_handle(t).query(TeamWorkflow.transcript, False) for t in (th, other)]

    assert failures["failed"] == 3 * webhooks.WATCH_ATTEMPTS - 1
    assert (retried["run_id"], retried["kwargs"]) == ("t1", {})
    assert [(b["run_id"], b["status"]) for b in bodies] == [("t1", "success")]
    assert unwatched["run_id"] == "t1"
    assert unwatched["kwargs"]["webhook_error"].startswith(
        f"run t1 of thread {other} went in, but its webhook's watcher did not start: the server is unreachable")
    assert joined["messages"][-1]["content"] == faang.ANSWER
    assert [[m.content for m in t if m.role == "user"] for t in transcripts] == [[faang.QUESTION]] * 2  # once each
    assert len(receiver.accepted()) == 1  # the later runs' webhooks: not watched, and said so
    assert waited.status_code == 200 and waited.json()["messages"][-1]["content"] == faang.ANSWER
    assert waited.headers["x-webhook-error"].startswith(f"run t1 of thread {third} went in, but its webhook's")


async def test_interrupt_runs_sent_at_once_each_interrupt_the_ones_before_them(
        client: Client, task_queue: str) -> None:
    """A thread running a turn; five runs with multitask_strategy "interrupt" at once: each is
    taken (200), the last the thread took runs, the running turn and the four others end
    cancelled (they queued behind each other: four runs left to run after it)."""
    model = GatedModel()  # every model call waits for the gate: a turn stays running until it opens
    async with running_worker(client, task_queue, [TEAM], model):
        async with running_gateway(client, task_queue, teams=["echo"]) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=120) as http:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            th = (await lg.threads.create())["thread_id"]
            await lg.runs.create(th, "echo", input=human("first"))
            runs = await asyncio.gather(*[http.post(f"/threads/{th}/runs", json={
                "assistant_id": "echo", "input": human(f"interrupting {n}"), "multitask_strategy": "interrupt"})
                for n in range(5)])
            model.gate.set()
            last: Any = await lg.runs.join(th, "t6")
        replies = await client.get_workflow_handle(th).query(TeamWorkflow.turn_replies, list(range(1, 7)))

    assert [r.status_code for r in runs] == [200] * 5, [r.text[:200] for r in runs]
    assert sorted(r.json()["run_id"] for r in runs) == ["t2", "t3", "t4", "t5", "t6"]
    assert [(r.turn, r.status) for r in replies] == [(n, "cancelled") for n in range(1, 6)] + [(6, "completed")]
    assert last["messages"][-1]["content"].startswith("heard: interrupting ")


async def test_a_tenants_thread_ids_are_its_own(client: Client, task_queue: str) -> None:
    """Two tenants each create, run and find a thread `shared` (and one made by a run with
    if_not_exists="create"): neither learns of the other's (it was a 409 "already exists" for
    the second, which told it the id was in use); an operator sees both by their workflow ids."""
    teams, model = faang_and_support()
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang"], tokens=TOKENS) as url, \
                httpx.AsyncClient(base_url=f"{url}/langgraph", timeout=60) as http:
            shop, crm = (get_client(url=f"{url}/langgraph", api_key=key) for key in ("shop-secret", "crm-secret"))
            made = [await lg.threads.create(thread_id="shared", graph_id="faang") for lg in (shop, crm)]
            again = error_of(await http.post("/threads", json={"thread_id": "shared"}, headers=CRM))
            kept = await crm.threads.create(thread_id="shared", if_exists="do_nothing")
            done: Any = await shop.runs.wait("shared", "faang", input=human(faang.QUESTION))
            crm_state: Any = await crm.threads.get_state("shared")
            created = [await lg.runs.create("made-by-run", "faang", input=human(faang.QUESTION),
                                            if_not_exists="create") for lg in (shop, crm)]
            joined = [await lg.runs.join("made-by-run", "t1") for lg in (shop, crm)]
            found = [sorted(t["thread_id"] for t in await lg.threads.search(limit=100)) for lg in (shop, crm)]
            streamed = [p async for p in crm.runs.stream("shared", "faang", input=human(faang.QUESTION))]
            history = await crm.threads.get_history("shared")
            operator = {t["thread_id"] async for t in _all(client, task_queue)}

    assert [t["thread_id"] for t in made] == ["shared", "shared"]
    assert again == (409, "thread shared already exists")  # its own, named as it named it
    assert kept["thread_id"] == "shared" and kept["values"]["messages"] == []
    assert done["messages"][-1]["content"] == faang.ANSWER and crm_state["values"]["messages"] == []
    assert [(r["run_id"], r["thread_id"]) for r in created] == [("t1", "made-by-run")] * 2
    assert [j["messages"][-1]["content"] for j in joined] == [faang.ANSWER] * 2
    assert found == [["made-by-run", "shared"]] * 2
    assert streamed[0].data["thread_id"] == "shared"
    assert {h["checkpoint"]["thread_id"] for h in history} == {"shared"}
    assert {"shop:shared", "crm:shared", "shop:made-by-run", "crm:made-by-run"} <= operator


async def _all(client: Client, task_queue: str) -> Any:
    async for wf in client.list_workflows(f"TaskQueue = '{task_queue}'"):
        yield {"thread_id": wf.id}
