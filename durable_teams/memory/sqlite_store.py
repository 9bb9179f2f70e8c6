"""The embedded store: one SQLite file (the default; needs nothing installed), beside the dev
server's state in ~/.durable-teams unless configured. Several processes on one machine may
share the file (WAL mode, a busy timeout); several machines need PostgreSQL (postgres_store.py).

The file holds people's memories, so it is private: a new file is made 0600 (SQLite gives its
-wal and -shm files the same mode). The store makes no folder, except the default store's own
(`private_folder=True`, made 0700): a store named in a missing folder is refused with a
`StoreError` naming the folder. Reading never makes the file: a missing file holds no items.
The default store also tightens an older file (and ~/.durable-teams itself) that others could
read, and logs a warning saying so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from .store import Item, Namespace, Row, Store, StoreError, joined, split, under

T = TypeVar("T")
log = logging.getLogger(__name__)

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
    return home_folder() / "memory.sqlite3"


def home_folder() -> Path:
    """The product's own folder (the dev server's state): private to its user."""
    return Path.home() / ".durable-teams"


class SQLiteStore(Store):
    """Items in a SQLite file; calls run in a thread so the worker's event loop never waits.
    `private_folder`: make the folder (0700) when missing and keep the file private (the
    default store)."""

    def __init__(self, path: str | Path, *, private_folder: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.private_folder = private_folder
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        return f"sqlite file {self.path}"

    def _connection(self, write: bool) -> sqlite3.Connection | None:
        """The connection; None when reading a file that does not exist (nothing to read)."""
        if self._conn is None:
            if str(self.path) != ":memory:":
                if not self._prepare_file(write):
                    return None
            conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(SCHEMA)
            self._conn = conn
        return self._conn

    def _prepare_file(self, write: bool) -> bool:
        """Whether the file is there to open: made (0600) for a write, its folder checked."""
        folder = self.path.parent
        if self.private_folder:
            if not folder.is_dir() and write:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder == home_folder() and folder.is_dir():
                _keep_private(folder, 0o700)
        else:
            self.check_folder()
        if not self.path.exists():
            if not write:
                return False
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        elif self.private_folder:
            for file in (self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm"))):
                if file.exists():
                    _keep_private(file, 0o600)
        return True

    def check_folder(self) -> None:
        """Raises `StoreError` when the file's folder is missing and not the store's to make."""
        folder = self.path.parent
        if not self.private_folder and str(self.path) != ":memory:" and not folder.is_dir():
            raise StoreError(f"no folder {folder} for the store file {self.path.name}: create it "
                             "first (only the default store's folder is made)")

    def exists(self) -> bool:
        """Whether the file is there (reading a missing one finds no items and makes nothing)."""
        return self._conn is not None or str(self.path) == ":memory:" or self.path.exists()

    async def _run(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False,
                   missing: T) -> T:
        """`work` on the connection, in a thread; `missing` when reading a file not yet made."""
        def locked() -> T:
            with self._lock:
                conn = self._connection(write)
                return missing if conn is None else work(conn)
        return await asyncio.to_thread(locked)

    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None:
        vec = None if vector is None else json.dumps(vector)
        await self._run(lambda c: c.execute(UPSERT, (joined(namespace), key, value, vec)),
                        write=True, missing=None)

    async def _select(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        rows: list[tuple[Any, ...]] = await self._run(lambda c: c.execute(sql, args).fetchall(), missing=[])
        return [_row(r) for r in rows]

    async def _get(self, namespace: Namespace, key: str) -> Item | None:
        rows = await self._select(f"SELECT {COLUMNS} FROM memory_items WHERE namespace = ? AND key = ?",
                                  (joined(namespace), key))
        return rows[0].item if rows else None

    async def _delete(self, namespace: Namespace, key: str) -> bool:
        return await self._run(lambda c: c.execute(
            "DELETE FROM memory_items WHERE namespace = ? AND key = ?",
            (joined(namespace), key)).rowcount > 0, missing=False)

    async def _delete_prefix(self, prefix: Namespace) -> int:
        return await self._run(lambda c: c.execute(
            f"DELETE FROM memory_items WHERE {UNDER}", _under_args(prefix)).rowcount, missing=0)

    async def _rows(self, prefix: Namespace) -> list[Row]:
        if prefix:
            return await self._select(f"SELECT {COLUMNS} FROM memory_items WHERE {UNDER}", _under_args(prefix))
        return await self._select(f"SELECT {COLUMNS} FROM memory_items")

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


def _keep_private(path: Path, mode: int) -> None:
    """Take group and others' access off `path` (the default store's folder and files)."""
    current = stat.S_IMODE(path.stat().st_mode)
    if not current & 0o077:
        return
    try:
        os.chmod(path, current & ~0o077 | mode)
    except OSError as err:  # not ours to change: say so, and go on
        log.warning("durable-teams memory: %s can be read by other users (mode %o) and could not "
                    "be made private (%s)", path, current, err.strerror or err)
        return
    log.warning("durable-teams memory: %s could be read by other users (mode %o); made it "
                "private (%o)", path, current, current & ~0o077 | mode)
