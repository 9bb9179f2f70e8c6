"""The in-memory store: a dict in this process, for tests and one-off scripts (nothing survives
the process, and two workers do not share it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from .store import Item, Namespace, Row, Store, joined, under


class InMemoryStore(Store):
    """Items in a dict keyed by (namespace, key)."""

    def __init__(self) -> None:
        self._items: dict[tuple[Namespace, str], Row] = {}

    @property
    def description(self) -> str:
        return "memory (this process only)"

    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None:
        now = datetime.now(UTC)
        old = self._items.get((namespace, key))
        created = old.item.created_at if old else now
        self._items[(namespace, key)] = Row(Item(namespace, key, json.loads(value), created, now), vector)

    async def _get(self, namespace: Namespace, key: str) -> Item | None:
        row = self._items.get((namespace, key))
        return row.item if row else None

    async def _delete(self, namespace: Namespace, key: str) -> bool:
        return self._items.pop((namespace, key), None) is not None

    async def _delete_prefix(self, prefix: Namespace) -> int:
        gone = [k for k in self._items if _under(k[0], prefix)]
        for k in gone:
            del self._items[k]
        return len(gone)

    async def _rows(self, prefix: Namespace) -> list[Row]:
        return [row for (ns, _), row in self._items.items() if _under(ns, prefix)]


def _under(namespace: Namespace, prefix: Namespace) -> bool:
    return namespace == prefix or joined(namespace).startswith(under(prefix))
