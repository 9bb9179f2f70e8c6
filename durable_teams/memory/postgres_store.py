"""The PostgreSQL store, for several workers on several machines (the `postgres` extra:
`pip install 'durable-teams[postgres]'`, psycopg 3). One connection per worker process, made on
first use and made again after it breaks; the table is created on first use."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from .store import Item, Namespace, Row, Store, StoreError, joined, split, under

SCHEMA = """
CREATE TABLE IF NOT EXISTS durable_teams_memory (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value JSONB NOT NULL,
    vector JSONB,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, key)
)"""
SCHEMA_LOCK = 0x6475_7261_626C_65  # an advisory lock id: two workers creating the table at once
# the primary key makes a put an upsert: a retried write replaces the item it wrote
UPSERT = """
INSERT INTO durable_teams_memory (namespace, key, value, vector) VALUES (%s, %s, %s::jsonb, %s::jsonb)
ON CONFLICT (namespace, key) DO UPDATE
SET value = excluded.value, vector = excluded.vector, updated_at = now()"""
COLUMNS = "namespace, key, value::text, vector::text, created_at, updated_at"
UNDER = "(namespace = %s OR starts_with(namespace, %s))"


def safe_dsn(dsn: str) -> str:
    """The DSN without its password (for logs and messages)."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


class PostgresStore(Store):
    """Items in the table `durable_teams_memory` of the database `dsn` names."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn: Any = None
        self._lock = asyncio.Lock()

    @property
    def description(self) -> str:
        return f"postgresql {safe_dsn(self._dsn)}"

    async def _connection(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            import psycopg
        except ImportError:
            raise StoreError("the PostgreSQL store needs psycopg: pip install "
                             "'durable-teams[postgres]'") from None
        conn = await psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            await conn.execute(SCHEMA)
        self._conn = conn
        return conn

    async def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        async with self._lock:
            conn = await self._connection()
            try:
                return await conn.execute(sql, args)
            except Exception as err:
                if conn.closed or conn.broken:
                    self._conn = None  # made again by the next call (the activity's retry)
                refused = refused_value(err)
                if refused is not None:
                    raise refused from None
                raise

    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None:
        vec = None if vector is None else json.dumps(vector)
        await self._execute(UPSERT, (joined(namespace), key, value, vec))

    async def _get(self, namespace: Namespace, key: str) -> Item | None:
        cur = await self._execute(f"SELECT {COLUMNS} FROM durable_teams_memory WHERE namespace = %s "
                                  "AND key = %s", (joined(namespace), key))
        row = await cur.fetchone()
        return _row(row).item if row else None

    async def _delete(self, namespace: Namespace, key: str) -> bool:
        cur = await self._execute("DELETE FROM durable_teams_memory WHERE namespace = %s AND key = %s",
                                  (joined(namespace), key))
        return bool(cur.rowcount)

    async def _delete_prefix(self, prefix: Namespace) -> int:
        cur = await self._execute(f"DELETE FROM durable_teams_memory WHERE {UNDER}",
                                  (joined(prefix), under(prefix)))
        return int(cur.rowcount)

    async def _rows(self, prefix: Namespace) -> list[Row]:
        if prefix:
            cur = await self._execute(f"SELECT {COLUMNS} FROM durable_teams_memory WHERE {UNDER}",
                                      (joined(prefix), under(prefix)))
        else:
            cur = await self._execute(f"SELECT {COLUMNS} FROM durable_teams_memory")
        return [_row(r) for r in await cur.fetchall()]

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None


def _row(r: tuple[Any, ...]) -> Row:
    item = Item(split(r[0]), r[1], json.loads(r[2]), r[4], r[5])
    return Row(item, None if r[3] is None else json.loads(r[3]))


def refused_value(err: Exception) -> StoreError | None:
    """A value PostgreSQL refused, as the `StoreError` the other backends raise (store_checks.py
    refuses what is known first; this keeps any other refusal a `StoreError` too)."""
    import psycopg

    if isinstance(err, psycopg.DataError | psycopg.errors.ProgramLimitExceeded):
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return StoreError(f"PostgreSQL cannot store it ({first})")
    return None
