"""The LangGraph door's crons on Temporal Schedules and run webhooks, through the real
`langgraph-sdk` client: a thread's cron fires (triggered: a schedule's firing is Temporal's to
make) and its message is the thread's next turn; an assistant's cron starts a thread of its own; search and delete keep
to the caller's scope; a run's webhook is delivered to a local receiver once the run ends,
retried after a failure, and refused before the run begins for an address that is not public
(`interrupted` when the run stopped at a question, however soon it was resumed); a cron's
webhook told of each run the cron fires;
the store's items over the memory store, kept to each tenant."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from temporalio.client import Client

from durable_teams.activities import a2a_push_delivery
from durable_teams.examples import support
from durable_teams.gateway.core.scopes import Token
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.a2a_tasks import TaskState

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .teams import TEAM, echo
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TOKENS = [Token("shop-secret", "shop"), Token("crm-secret", "crm")]
YEARLY = "0 0 1 1 *"
"""A schedule that does not fire during the test by itself: each firing is triggered."""


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_a_threads_cron_fires_as_its_next_turn(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with running_gateway(client, task_queue, teams=["echo"], tokens=TOKENS) as url:
            lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")
            other = get_client(url=f"{url}/langgraph", api_key="crm-secret")
            thread = (await lg.threads.create())["thread_id"]
            cron = await lg.crons.create_for_thread(thread, "echo", schedule=YEARLY, input=human("daily report"))
            stateless = await lg.crons.create("echo", schedule=YEARLY, input=human("weekly digest"))
            with pytest.raises(NotFoundError):
                await other.crons.create_for_thread(thread, "echo", schedule=YEARLY, input=human("x"))
            with pytest.raises(NotFoundError):
                await lg.crons.create_for_thread("no-such-thread", "echo", schedule=YEARLY, input=human("x"))
            await client.get_schedule_handle(cron["cron_id"]).trigger()
            joined = await until(lambda: joined_run(lg, thread), "the cron's turn ran")
            await client.get_schedule_handle(stateless["cron_id"]).trigger()

            async def digest() -> list[Any]:
                return [t for t in await lg.threads.search(limit=20)
                        if t["values"]["messages"][-1:] and t["values"]["messages"][-1]["content"] == "heard: weekly digest"]
            fired = await until(digest, "the assistant's cron ran a thread of its own")
            listed = await until(lambda: two(lg), "both crons listed")
            hidden = await other.crons.search()
            with pytest.raises(NotFoundError):
                await other.crons.delete(cron["cron_id"])
            await lg.crons.delete(cron["cron_id"])
            await lg.crons.delete(stateless["cron_id"])
            with pytest.raises(NotFoundError):
                await lg.crons.delete(cron["cron_id"])

    assert cron["thread_id"] == thread and cron["schedule"] == YEARLY and cron["next_run_date"]
    assert stateless["thread_id"] is None and stateless["assistant_id"] == "echo"
    assert [m["content"] for m in joined["messages"]] == ["daily report", "heard: daily report"]
    assert len(fired) == 1 and fired[0]["thread_id"] != thread
    assert {c["cron_id"] for c in listed} == {cron["cron_id"], stateless["cron_id"]} and hidden == []


async def joined_run(lg: Any, thread: str) -> Any:
    runs = await lg.runs.list(thread)
    return await lg.runs.join(thread, runs[0]["run_id"]) if runs else None


async def two(lg: Any) -> Any:
    found = await lg.crons.search()
    return found if len(found) == 2 else None


async def test_a_runs_webhook_is_delivered_once_it_ends_retried_after_a_failure(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_RETRY_SECONDS", "0.01")
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_POLL_SECONDS", "0.05")
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with running_gateway(client, task_queue, teams=["echo"], tokens=TOKENS) as url, \
                receiving() as receiver:
            lg = get_client(url=f"{url}/langgraph", api_key="crm-secret")  # its thread: its own id in the webhook
            thread = (await lg.threads.create())["thread_id"]
            with pytest.raises(UnprocessableEntityError, match="webhook .*loopback"):
                await lg.runs.create(thread, "echo", input=human("to a private address"), webhook=receiver.url)
            refused_runs = await lg.runs.list(thread)
            monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ALLOW_PRIVATE", "1")  # the operator's choice
            receiver.answers = [503]  # the first delivery fails: it is sent again
            run = await lg.runs.create(thread, "echo", input=human("hello"), webhook=receiver.url)

            async def delivered() -> list[Any]:
                return receiver.accepted()
            bodies = await until(delivered, "the webhook delivered")

    assert refused_runs == []  # refused before the run began
    assert receiver.statuses == [503, 200]
    assert bodies == [{"run_id": run["run_id"], "thread_id": thread, "assistant_id": "echo", "status": "success",
                       "metadata": {}, "multitask_strategy": "reject"}]


async def test_a_crons_webhook_is_delivered_after_each_run_it_fires(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`webhook=` on a cron (a thread's and an assistant's): each firing's run is told to the
    URL once it ends, retried after a failure; a URL that is not public is refused when the
    cron is made, as for a run. A tenant's webhooks name its threads by its own ids (the
    workflows are `shop:<id>`)."""
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_RETRY_SECONDS", "0.01")
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_POLL_SECONDS", "0.05")
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with running_gateway(client, task_queue, teams=["echo"], tokens=TOKENS) as url, \
                receiving() as receiver:
            lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")
            thread = (await lg.threads.create())["thread_id"]
            with pytest.raises(UnprocessableEntityError, match="webhook .*loopback"):
                await lg.crons.create_for_thread(thread, "echo", schedule=YEARLY, input=human("x"), webhook=receiver.url)
            assert await lg.crons.search() == []  # refused: no cron made
            monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ALLOW_PRIVATE", "1")  # the operator's choice
            cron = await lg.crons.create_for_thread(thread, "echo", schedule=YEARLY, input=human("daily report"),
                                                    webhook=receiver.url)
            receiver.answers = [503]  # the first delivery fails: it is sent again
            await client.get_schedule_handle(cron["cron_id"]).trigger()

            async def delivered(count: int) -> list[Any]:
                return receiver.accepted() if len(receiver.accepted()) >= count else []
            first = await until(lambda: delivered(1), "the thread's cron's webhook delivered")
            joined = await lg.runs.join(thread, first[0]["run_id"])
            stateless = await lg.crons.create("echo", schedule=YEARLY, input=human("weekly digest"),
                                              webhook=receiver.url)
            await client.get_schedule_handle(stateless["cron_id"]).trigger()
            both = await until(lambda: delivered(2), "the assistant's cron's webhook delivered")
            fired = await lg.threads.get(both[1]["thread_id"])
            await lg.crons.delete(cron["cron_id"])
            await lg.crons.delete(stateless["cron_id"])

    assert cron["payload"]["webhook"] == receiver.url and stateless["payload"]["webhook"] == receiver.url
    assert receiver.statuses == [503, 200, 200]
    assert both[0] == {"run_id": "t1", "thread_id": thread, "assistant_id": "echo", "status": "success",
                       "metadata": {}, "multitask_strategy": "reject"}
    assert [m["content"] for m in joined["messages"]] == ["daily report", "heard: daily report"]
    assert both[1] == {**both[0], "thread_id": fired["thread_id"]} and fired["thread_id"] != thread
    assert [m["content"] for m in fired["values"]["messages"]] == ["weekly digest", "heard: weekly digest"]


async def test_a_runs_webhook_tells_an_interrupt_however_soon_it_was_resumed(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that stopped at a question is `interrupted` to its webhook, though it was resumed
    at once and the task's state is read only after everything ended (a loaded machine): the
    webhook's watch follows the thread's history, where the question is."""
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("DURABLE_TEAMS_LANGGRAPH_WEBHOOK_RETRY_SECONDS", "0.01")
    support.REFUNDS.clear()
    ended, real_state = asyncio.Event(), a2a_push_delivery.task_state

    async def late_state(thread: str, turn: int) -> TaskState:
        await ended.wait()
        return await real_state(thread, turn)

    monkeypatch.setattr(a2a_push_delivery, "task_state", late_state)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["support"]) as url, receiving() as receiver:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="support"))["thread_id"]
            asked = await lg.runs.wait(thread, "support", input=human(support.QUESTION), webhook=receiver.url)
            await lg.runs.wait(thread, "support", command={"resume": "Order 4711"})
            done = await lg.runs.wait(thread, "support", command={"resume": True})
            ended.set()

            async def delivered() -> list[Any]:
                return receiver.accepted()
            bodies = await until(delivered, "the webhook delivered")

    assert "__interrupt__" in asked and "__interrupt__" not in done and len(support.REFUNDS) == 1
    assert [(b["run_id"], b["status"]) for b in bodies] == [("t1", "interrupted")]


async def test_the_store_over_the_memory_store_kept_to_each_tenant(
        client: Client, task_queue: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_MEMORY", f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    async with running_gateway(client, task_queue, teams=["echo"], tokens=[*TOKENS, Token("ops-secret")]) as url:
        lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")
        other = get_client(url=f"{url}/langgraph", api_key="crm-secret")
        operator = get_client(url=f"{url}/langgraph", api_key="ops-secret")
        await lg.store.put_item(["users", "u-42"], "boots", {"text": "size 44, returned once"})
        await lg.store.put_item(["users", "u-42"], "tone", {"text": "prefers short answers"})
        item = await lg.store.get_item(["users", "u-42"], "boots")
        found = await lg.store.search_items(["users"], query="boots size")
        spaces = await lg.store.list_namespaces()
        with pytest.raises(NotFoundError):
            await other.store.get_item(["users", "u-42"], "boots")
        hidden = await other.store.search_items(["users"])
        everything = await operator.store.list_namespaces()
        await lg.store.delete_item(["users", "u-42"], "boots")
        with pytest.raises(NotFoundError):
            await lg.store.get_item(["users", "u-42"], "boots")

    assert item["namespace"] == ["users", "u-42"] and item["value"] == {"text": "size 44, returned once"}
    assert [i["key"] for i in found["items"]] == ["boots"]
    assert spaces["namespaces"] == [["users", "u-42"]] and hidden["items"] == []
    assert everything["namespaces"] == [["scope:shop", "users", "u-42"]]  # an operator sees the tenant's prefix
