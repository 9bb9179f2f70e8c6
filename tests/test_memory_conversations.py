"""Memory across conversations, end to end on the session's dev server: one user's two
conversations on two threads, the first storing a preference through a tool and the second
reading it (SQLite here, PostgreSQL in tests/test_memory_postgres.py); a write retried after a
lost reply leaves one item; a cached tool runs once for two conversations."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.memory.sqlite_store import SQLiteStore
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .memory_scenario import QUICK, assistant_script, one_user_two_threads

pytestmark = pytest.mark.workflow

@pytest.mark.slow  # over a second: out of the quick loop
async def test_one_user_two_threads_share_a_preference_on_sqlite(client: Client, task_queue: str, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.sqlite3")
    try:
        await one_user_two_threads(client, task_queue, store)
    finally:
        await store.close()


COUNTED: list[str] = []


@tool(idempotent=True, cache_seconds=300)
def stock_price(symbol: str) -> str:
    """The latest price of a stock (counts its runs)."""
    COUNTED.append(symbol)
    return f"{symbol}: 101.5"


async def test_a_cached_tool_runs_once_for_two_conversations(client: Client, task_queue: str, tmp_path: Path) -> None:
    def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
        last = messages[-1]
        return say(last["content"]) if last["role"] == "tool" else call("stock_price", symbol="ACME")

    team = Swarm([Agent("analyst", tools=[stock_price])]).compile()
    store = SQLiteStore(tmp_path / "memory.sqlite3")
    symbol = f"ACME-{uuid.uuid4().hex[:4]}"
    COUNTED.clear()
    try:
        async with running_worker(client, task_queue, [team], ScriptedModel(script), memory=store):
            handles = []
            for n in range(2):
                handle = await client.start_workflow(
                    TeamWorkflow.run, ConversationInput(team=team.spec, task=f"price of {symbol}?"),
                    id=f"cache-{n}-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
                await handle.result()
                handles.append(handle)
            transcripts = [await h.query(TeamWorkflow.transcript) for h in handles]
    finally:
        await store.close()
    assert COUNTED == ["ACME"]
    tool_messages = [[m.content for m in t if m.role == "tool"] for t in transcripts]
    assert tool_messages[0] == ["ACME: 101.5"]
    assert tool_messages[1][0].startswith("ACME: 101.5\n\n[cached result from ")


async def test_without_a_user_the_memory_tools_keep_to_the_teams_namespace(
        client: Client, task_queue: str, tmp_path: Path) -> None:
    team_name = f"desk-{uuid.uuid4().hex[:6]}"
    team = Swarm([Agent("assistant", tools=QUICK)], name=team_name).compile()
    store = SQLiteStore(tmp_path / "memory.sqlite3")
    try:
        async with running_worker(client, task_queue, [team], ScriptedModel(assistant_script), memory=store):
            result = await client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task="Please remember: blue."),
                id=f"memory-team-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        items = await store.search(())
    finally:
        await store.close()
    assert result.answer == "Noted."
    assert [(i.namespace, i.key) for i in items] == [(("teams", team_name, "memories"), "favorite_color")]
