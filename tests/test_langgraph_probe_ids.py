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
from durable_teams.gateway.doors.langgraph import langgraph_webhooks as webhooks
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


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
