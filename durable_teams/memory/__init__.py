"""The memory store: namespaced JSON items shared across conversations (LangGraph's `store`).

`Store` is the type a tool declares to receive the worker's store; the backends live one per
module (in memory, SQLite, PostgreSQL); `MEMORY_TOOLS` are the built-in remember / recall /
forget tools (docs/memory.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "Store": "durable_teams.memory.store",
    "Item": "durable_teams.memory.store",
    "StoreError": "durable_teams.memory.store",
    "InMemoryStore": "durable_teams.memory.memory_backends",
    "SQLiteStore": "durable_teams.memory.sqlite_store",
    "PostgresStore": "durable_teams.memory.postgres_store",
    "MEMORY_TOOLS": "durable_teams.memory.memory_tools",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.memory.memory_backends import InMemoryStore
    from durable_teams.memory.memory_tools import MEMORY_TOOLS
    from durable_teams.memory.postgres_store import PostgresStore
    from durable_teams.memory.sqlite_store import SQLiteStore
    from durable_teams.memory.store import Item, Store, StoreError
