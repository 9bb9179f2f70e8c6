"""The embedded store: one SQLite file (the default; needs nothing installed), beside the dev
server's state in ~/.durable-teams unless configured. Several processes on one machine may
share the file (WAL mode, a busy timeout); several machines need PostgreSQL (postgres_store.py).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from .store import Item, Namespace, Row, Store, joined, split, under

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_items (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    vector TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
)"""
NOW = "strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')"
# the primary key makes a put an upsert: a retried write replaces the item it wrote
UPSERT = f"""
INSERT INTO memory_items (namespace, key, value, vector, created_at, updated_at)
VALUES (?, ?, ?, ?, {NOW}, {NOW})
ON CONFLICT (namespace, key) DO UPDATE
SET value = excluded.value, vector = excluded.vector, updated_at = excluded.updated_at"""
COLUMNS = "namespace, key, value, vector, created_at, updated_at"
UNDER = "(namespace = ? OR substr(namespace, 1, ?) = ?)"


def default_sqlite_path() -> Path:
    return Path.home() / ".durable-teams" / "memory.sqlite3"


class SQLiteStore(Store):
    """Items in a SQLite file; calls run in a thread so the worker's event loop never waits."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        return f"sqlite file {self.path}"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(SCHEMA)
            self._conn = conn
        return self._conn

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                return work(self._connection())
        return await asyncio.to_thread(locked)

    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None:
        vec = None if vector is None else json.dumps(vector)
        await self._run(lambda c: c.execute(UPSERT, (joined(namespace), key, value, vec)))

    async def _get(self, namespace: Namespace, key: str) -> Item | None:
        rows = await self._run(lambda c: c.execute(
            f"SELECT {COLUMNS} FROM memory_items WHERE namespace = ? AND key = ?",
            (joined(namespace), key)).fetchall())
        return _row(rows[0]).item if rows else None

    async def _delete(self, namespace: Namespace, key: str) -> bool:
        cursor = await self._run(lambda c: c.execute(
            "DELETE FROM memory_items WHERE namespace = ? AND key = ?", (joined(namespace), key)))
        return cursor.rowcount > 0

    async def _delete_prefix(self, prefix: Namespace) -> int:
        cursor = await self._run(lambda c: c.execute(
            f"DELETE FROM memory_items WHERE {UNDER}", _under_args(prefix)))
        return cursor.rowcount

    async def _rows(self, prefix: Namespace) -> list[Row]:
        if prefix:
            rows = await self._run(lambda c: c.execute(
                f"SELECT {COLUMNS} FROM memory_items WHERE {UNDER}", _under_args(prefix)).fetchall())
        else:
            rows = await self._run(lambda c: c.execute(f"SELECT {COLUMNS} FROM memory_items").fetchall())
        return [_row(r) for r in rows]

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _under_args(prefix: Namespace) -> tuple[Any, ...]:
    start = under(prefix)
    return (joined(prefix), len(start), start)


def _row(r: tuple[Any, ...]) -> Row:
    item = Item(split(r[0]), r[1], json.loads(r[2]), datetime.fromisoformat(r[4]),
                datetime.fromisoformat(r[5]))
    return Row(item, None if r[3] is None else json.loads(r[3]))
