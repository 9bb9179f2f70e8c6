"""The worker's store, from its environment (nothing about it travels through history):

- `DURABLE_TEAMS_MEMORY`: `sqlite:///path/to/file` in an existing folder (the default:
  `memory.sqlite3` beside the dev server's state, `~/.durable-teams`, made private: folder
  0700, file 0600), `postgresql://user:password@host:port/db` (several
  workers; the `postgres` extra) or `memory:` (this process only, for tests).
- `DURABLE_TEAMS_MEMORY_EMBEDDINGS`: an embedding model's name turns on semantic search, at
  `DURABLE_TEAMS_MEMORY_EMBEDDINGS_URL` (default OPENAI_BASE_URL), key OPENAI_API_KEY.

The store is opened on first use: a worker whose tools never touch it creates no file and
opens no connection.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

from .memory_backends import InMemoryStore
from .memory_embeddings import OpenAIEmbedder
from .postgres_store import PostgresStore, safe_dsn
from .sqlite_store import SQLiteStore
from .store import Store, StoreError

ENV = "DURABLE_TEAMS_MEMORY"
EMBEDDINGS_ENV = "DURABLE_TEAMS_MEMORY_EMBEDDINGS"
EMBEDDINGS_URL_ENV = "DURABLE_TEAMS_MEMORY_EMBEDDINGS_URL"


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """`memory.sqlite3` beside the dev server's database (`$DURABLE_TEAMS_DB`, else
    `~/.durable-teams/temporal.db`)."""
    env = os.environ if environ is None else environ
    db = env.get("DURABLE_TEAMS_DB")
    folder = Path(db).expanduser().parent if db else Path.home() / ".durable-teams"
    return folder / "memory.sqlite3"


def open_store(url: str | None = None, environ: Mapping[str, str] | None = None, *,
               named_by: str = "the store URL") -> Store:
    """The store `url` names (else `$DURABLE_TEAMS_MEMORY`, else the default SQLite file).
    Raises `StoreError` for a URL it cannot use, without repeating a password; the message
    names where the URL came from (`named_by`, e.g. the CLI's `--store`, or the variable)."""
    env = os.environ if environ is None else environ
    if url is None:
        url, named_by = env.get(ENV, ""), ENV
    url = url.strip()
    store: Store
    if not url:
        store = SQLiteStore(default_path(env), private_folder=True)
    elif url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path:
            raise StoreError(f"{named_by}: sqlite:// needs a path, e.g. "
                             "sqlite:///var/lib/app/memory.sqlite3")
        store = SQLiteStore(path)
        try:
            store.check_folder()  # now: a worker logs it once, the CLI says it in one line
        except StoreError as err:
            raise StoreError(f"{named_by}: {err}") from None
    elif url.split(":", 1)[0] in ("postgresql", "postgres"):
        store = PostgresStore(url)
    elif url in ("memory:", "memory://"):
        store = InMemoryStore()
    else:
        raise StoreError(f"{named_by}: {safe_dsn(url)!r} is not a store URL; use sqlite:///path, "
                         "postgresql://user:password@host:port/db or memory:")
    model = env.get(EMBEDDINGS_ENV, "").strip()
    if model:
        store.embedder = OpenAIEmbedder(model, base_url=env.get(EMBEDDINGS_URL_ENV) or None)
    return store


class LazyStore:
    """The worker's store, opened on first use (once, even by concurrent activities)."""

    def __init__(self, store: Store | None = None, url: str | None = None) -> None:
        self._store = store
        self._url = url
        self._lock = asyncio.Lock()
        self._opens = store is None
        """Whether it opens (so closes) the store itself; a store handed in is its owner's."""

    async def get(self) -> Store:
        if self._store is None:
            async with self._lock:
                if self._store is None:
                    self._store = open_store(self._url)
        return self._store

    async def close(self) -> None:
        """Close the store if this opened it (the worker does when it stops)."""
        if self._opens and self._store is not None:
            await self._store.close()
            self._store = None
