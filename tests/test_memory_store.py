"""The memory store (durable_teams/memory/): the in-memory and SQLite backends, configuration
from the environment, and the store given to tools. PostgreSQL: tests/test_memory_postgres.py."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.memory import memory_tools
from durable_teams.memory.memory_backends import InMemoryStore
from durable_teams.memory.postgres_store import PostgresStore, safe_dsn
from durable_teams.memory.sqlite_store import SQLiteStore
from durable_teams.memory.store import Store, StoreError
from durable_teams.memory.store_config import default_path, open_store
from durable_teams.teams.tools import ToolRegistry, tool
from durable_teams.workflows.messages import ToolRequest, ToolResult

from .memory_contract import HostileContract, StoreContract

pytestmark = pytest.mark.pure


class TestInMemory(StoreContract, HostileContract):
    @pytest.fixture
    def store(self) -> Store:
        return InMemoryStore()


class TestSQLite(StoreContract, HostileContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Store]:
        store = SQLiteStore(tmp_path / "memory.sqlite3")
        yield store
        await store.close()


async def test_sqlite_items_outlive_the_store_object(tmp_path: Path) -> None:
    """Another process (or a restarted worker) opening the file finds what was written."""
    path = tmp_path / "m.sqlite3"
    first = SQLiteStore(path)
    await first.put(("users", "u1"), "k", {"v": 1})
    await first.close()
    second = SQLiteStore(path)
    got = await second.get(("users", "u1"), "k")
    await second.close()
    assert got is not None and got.value == {"v": 1}


def test_the_store_is_chosen_by_url_without_showing_a_password(tmp_path: Path) -> None:
    env = {"DURABLE_TEAMS_DB": str(tmp_path / "state" / "temporal.db")}
    default = open_store(environ=env)
    assert isinstance(default, SQLiteStore) and default.path == tmp_path / "state" / "memory.sqlite3"
    assert default_path({}) == Path.home() / ".durable-teams" / "memory.sqlite3"
    named = open_store(f"sqlite://{tmp_path}/x.sqlite3", environ={})
    assert isinstance(named, SQLiteStore) and named.path == tmp_path / "x.sqlite3"
    assert isinstance(open_store("memory:", environ={}), InMemoryStore)
    pg = open_store("postgresql://app:s3cret@db.internal:5432/teams", environ={})
    assert isinstance(pg, PostgresStore)
    assert pg.description == "postgresql postgresql://app:***@db.internal:5432/teams"
    assert "s3cret" not in repr(vars(pg).get("description", "")) and "s3cret" not in pg.description
    with pytest.raises(StoreError) as refused:
        open_store("mysql://root:hunter2@db/x", environ={})
    assert "hunter2" not in str(refused.value) and "sqlite:///path" in str(refused.value)
    with pytest.raises(StoreError, match="needs a path"):
        open_store("sqlite://", environ={})
    semantic = open_store("memory:", environ={"DURABLE_TEAMS_MEMORY_EMBEDDINGS": "text-embedding-3-small"})
    assert semantic.embedder is not None
    assert safe_dsn("postgresql://host/db") == "postgresql://host/db"


# -- the store given to tools -------------------------------------------------------------


@tool
async def save_preference(name: str, value: str, user: str, store: Store) -> str:
    """Save a user's preference."""
    await store.put(("users", user, "preferences"), name, {"value": value})
    return f"saved {name}"


@tool
async def read_preference(name: str, user: str, store: Store | None = None) -> str:
    """Read a user's preference."""
    assert store is not None
    item = await store.get(("users", user, "preferences"), name)
    return "unknown" if item is None else item.value["value"]


def request(name: str, arguments: dict[str, Any], key: str = "wf/1/0/c1", **extra: Any) -> ToolRequest:
    return ToolRequest(tool=name, arguments=json.dumps(arguments), tool_call_id="c1",
                       idempotency_key=key, agent="clerk", **extra)


async def run(activities: ToolActivities, req: ToolRequest) -> ToolResult:
    return await ActivityEnvironment().run(activities.run_tool, req)


def test_a_store_parameter_is_never_shown_to_the_model() -> None:
    for t in (save_preference, read_preference, memory_tools.remember, memory_tools.recall):
        props = t.spec.parameters["properties"]
        assert "store" not in props and "store" not in t.spec.parameters["required"], t.spec.name
        assert "context_variables" not in props and "idempotency_key" not in props
    assert sorted(save_preference.spec.parameters["properties"]) == ["name", "user", "value"]


async def test_the_tool_activity_gives_tools_the_workers_store() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(save_preference, read_preference), store=store)
    saved = await run(activities, request("save_preference", {"name": "color", "value": "blue", "user": "u1"}))
    assert saved == ToolResult(content="saved color")
    assert await run(activities, request("read_preference", {"name": "color", "user": "u1"})) == ToolResult(content="blue")
    sent_store = await run(activities, request("read_preference", {"name": "color", "user": "u1", "store": "x"}))
    assert sent_store.is_error and "store: Extra inputs are not permitted" in sent_store.content


@pytest.mark.parametrize("url", ["mysql://root:hunter2@db/x", "sqlite:///no/such/hunter2/m.sqlite3"])
async def test_a_worker_whose_store_setting_is_refused_tells_the_model(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, url: str) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_MEMORY", url)
    activities = ToolActivities(ToolRegistry(save_preference))
    result = await run(activities, request("save_preference", {"name": "c", "value": "v", "user": "u"}))
    assert result.is_error and "cannot open" in result.content and "hunter2" not in result.content
    assert "the memory store cannot be opened: DURABLE_TEAMS_MEMORY: " in caplog.text


async def test_remember_retried_leaves_one_item_and_recall_is_bounded() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(*memory_tools.MEMORY_TOOLS), store=store)
    ctx = {"user_id": "u-7"}
    same_call = request("remember", {"text": "Prefers answers in French."}, context=ctx)
    first, retried = await run(activities, same_call), await run(activities, same_call)
    assert first == retried and first.content.startswith("Remembered (m-")
    other = request("remember", {"text": "Lives in Lyon.", "key": "city"}, key="wf/3/0/c1", context=ctx)
    assert (await run(activities, other)).content == "Remembered (city)."
    items = await store.search(("users", "u-7"))
    assert sorted(i.value["text"] for i in items) == ["Lives in Lyon.", "Prefers answers in French."]
    recalled = await run(activities, request("recall", {"query": "french"}, context=ctx))
    assert recalled.content.endswith(") Prefers answers in French.") and "Lyon" not in recalled.content
    assert (await run(activities, request("recall", {}, context={"user_id": "u-8"}))).content == "Nothing remembered."
    team_wide = await run(activities, request("remember", {"text": "x", "key": "k"}))
    assert team_wide.content == "Remembered (k)."
    assert [i.namespace for i in await store.search(("teams",))] == [("teams", "default", "memories")]
    too_long = await run(activities, request("remember", {"text": "x" * 2001}, context=ctx))
    assert too_long.content.startswith("Error: keep it under 2000")
    for n in range(30):
        await store.put(("users", "u-7", "memories"), f"n{n}", {"text": "y" * 5000})
    bounded = await run(activities, request("recall", {"limit": 100}, context=ctx))
    assert len(bounded.content.splitlines()) == 20 and len(bounded.content) < 20 * 2100
    assert (await run(activities, request("forget", {"key": "city"}, context=ctx))).content == "Forgot city."
    assert (await run(activities, request("forget", {"key": "city"}, context=ctx))).content == (
        "Nothing was remembered under 'city'.")


async def test_a_store_that_fails_is_retried_for_the_memory_tools() -> None:
    class Down(InMemoryStore):
        async def _put(self, *args: Any) -> None:
            raise ConnectionError("server closed the connection")

    activities = ToolActivities(ToolRegistry(*memory_tools.MEMORY_TOOLS), store=Down())
    with pytest.raises(Exception) as raised:
        await run(activities, request("remember", {"text": "t"}, context={"user_id": "u"}))
    assert "RetryableToolError" in repr(raised.value) or "memory store failed" in str(raised.value)


async def test_the_workers_store_opens_on_first_use_and_only_its_own_is_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_teams.memory.store_config import LazyStore

    path = tmp_path / "lazy.sqlite3"
    monkeypatch.setenv("DURABLE_TEAMS_MEMORY", f"sqlite://{path}")
    lazy = LazyStore()
    assert not path.exists()  # a worker whose tools never use memory makes no file
    opened = await lazy.get()
    assert await lazy.get() is opened
    await opened.put(("a",), "k", {"v": 1})
    assert path.exists()
    await lazy.close()
    assert isinstance(opened, SQLiteStore) and opened._conn is None
    handed = SQLiteStore(tmp_path / "handed.sqlite3")
    await handed.put(("a",), "k", {"v": 1})
    await LazyStore(handed).close()
    assert handed._conn is not None  # its owner closes it
    await handed.close()


# -- the default store is private --------------------------------------------------------------


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


async def test_the_default_store_is_made_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".durable-teams"
    store = open_store(environ={})
    assert await store.search(()) == [] and not folder.exists()  # reading makes nothing
    await store.put(("users", "u1"), "k", {"v": 1})
    side_files = [mode(folder / f"memory.sqlite3{end}") for end in ("-wal", "-shm")]
    await store.close()
    assert (mode(folder), mode(folder / "memory.sqlite3")) == (0o700, 0o600)
    assert side_files == [0o600, 0o600]  # SQLite gives its side files the file's mode


async def test_an_older_default_store_others_could_read_is_tightened_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".durable-teams"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)  # as the dev server (or an older version) made it
    old = SQLiteStore(folder / "memory.sqlite3")
    await old.put(("a",), "k", {"v": 1})
    await old.close()
    os.chmod(folder / "memory.sqlite3", 0o644)
    store = open_store(environ={})
    got = await store.get(("a",), "k")
    await store.close()
    assert got is not None and got.value == {"v": 1}
    assert (mode(folder), mode(folder / "memory.sqlite3")) == (0o700, 0o600)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(f"{folder} could be read by other users (mode 755); made it private (700)" in w for w in warned)
    assert any("memory.sqlite3 could be read by other users (mode 644)" in w for w in warned)


async def test_a_store_beside_a_chosen_database_keeps_that_folder_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$DURABLE_TEAMS_DB's folder is the user's (it may be a project's): only the file is private."""
    shared = tmp_path / "project"
    shared.mkdir()
    os.chmod(shared, 0o755)
    store = open_store(environ={"DURABLE_TEAMS_DB": str(shared / "temporal.db")})
    await store.put(("a",), "k", {"v": 1})
    await store.close()
    assert (mode(shared), mode(shared / "memory.sqlite3")) == (0o755, 0o600)


async def test_a_named_store_in_a_missing_folder_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=f"^DURABLE_TEAMS_MEMORY: no folder {tmp_path}/no/such for the "
                       "store file m.sqlite3: create it first"):
        open_store(environ={"DURABLE_TEAMS_MEMORY": f"sqlite://{tmp_path}/no/such/m.sqlite3"})
    store = SQLiteStore(tmp_path / "no" / "such" / "m.sqlite3")  # made directly: refused on use
    for call in (lambda: store.search(()), lambda: store.put(("a",), "k", {"v": 1})):
        with pytest.raises(StoreError, match=f"^no folder {tmp_path}/no/such for the store file m.sqlite3"):
            await call()
    assert not (tmp_path / "no").exists()
    named = open_store(f"sqlite://{tmp_path}/m.sqlite3", environ={})
    assert await named.get(("a",), "k") is None and not (tmp_path / "m.sqlite3").exists()
    await named.put(("a",), "k", {"v": 1})
    await named.close()
    assert mode(tmp_path / "m.sqlite3") == 0o600


def test_a_refused_url_names_where_it_came_from() -> None:
    with pytest.raises(StoreError, match="^DURABLE_TEAMS_MEMORY: 'nope' is not a store URL"):
        open_store(environ={"DURABLE_TEAMS_MEMORY": "nope"})
    with pytest.raises(StoreError, match="^--store: 'nope' is not a store URL"):
        open_store("nope", environ={"DURABLE_TEAMS_MEMORY": "memory:"}, named_by="--store")


async def test_a_default_store_that_cannot_be_made_private_is_warned_about_and_still_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".durable-teams"
    folder.mkdir()
    os.chmod(folder, 0o755)

    def refused(path: object, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("durable_teams.memory.sqlite_store.os.chmod", refused)
    store = open_store(environ={})
    await store.put(("a",), "k", {"v": 1})
    await store.close()
    assert mode(folder) == 0o755
    assert (f"{folder} can be read by other users (mode 755) and could not be made private "
            "(Operation not permitted)") in caplog.text
