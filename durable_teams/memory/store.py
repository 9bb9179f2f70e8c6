"""The memory store's type: items with a namespace (a tuple of strings such as
`("users", "u-42", "preferences")`), a key and a JSON object, shared across conversations.

A tool gets the worker's store by declaring a parameter annotated `Store`; the model never sees
that parameter (durable_teams/teams/tool_schema.py) and the tool activity fills it in. Every
backend (memory_backends.py, sqlite_store.py, postgres_store.py) keeps one item per
(namespace, key): `put` is an upsert, so a write retried after a timeout leaves one item.
Pure: no Temporal, no I/O here.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .store_checks import (
    Namespace,
    StoreError,
    check_address,
    check_key,
    check_page,
    check_text,
    namespace_of,
    value_json,
)

__all__ = ["Embedder", "Item", "StoreError", "Namespace", "SearchItem", "Store"]

SEPARATOR = "\x1f"
"""Joins a namespace's labels in the backends' text column (a label may not hold it)."""


@dataclass(frozen=True)
class Item:
    """One stored item."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {"namespace": list(self.namespace), "key": self.key, "value": self.value,
                "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat()}


@dataclass(frozen=True)
class SearchItem(Item):
    """An item found by `search`, with its relevance (None for a plain listing)."""

    score: float | None = field(default=None)

    def as_json(self) -> dict[str, Any]:
        return super().as_json() | ({} if self.score is None else {"score": round(self.score, 4)})


class Embedder(ABC):
    """Turns texts into vectors for semantic search (memory_embeddings.py calls an
    OpenAI-compatible `/v1/embeddings`)."""

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def joined(namespace: Namespace) -> str:
    return SEPARATOR.join(namespace)


def split(text: str) -> Namespace:
    return tuple(text.split(SEPARATOR)) if text else ()


def under(prefix: Namespace) -> str:
    """What every namespace strictly under `prefix` starts with, joined."""
    return joined(prefix) + SEPARATOR if prefix else ""


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether `value` has each of `wanted`'s fields with an equal value (nested dicts match
    field by field)."""
    for name, expected in (wanted or {}).items():
        if name not in value:
            return False
        actual = value[name]
        if isinstance(expected, Mapping) and isinstance(actual, Mapping):
            if not matches(actual, expected):
                return False
        elif actual != expected:
            return False
    return True


def words(text: str) -> list[str]:
    """The words of `text` for keyword search: runs of letters and digits, so `_`, `-`, `.` and
    other punctuation split them (`favorite_color` holds `color`); compared case- and
    width-blind (NFKC, casefold)."""
    return re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())


def keyword_score(item: Item, query: str) -> float:
    """The share of the query's words found in the item's key and value (0 to 1)."""
    wanted = set(words(query))
    if not wanted:
        return 1.0
    have = set(words(item.key + " " + json.dumps(item.value, ensure_ascii=False)))
    return len(wanted & have) / len(wanted)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def item_text(key: str, value: Mapping[str, Any]) -> str:
    """What is embedded for semantic search: the key and the value's text."""
    return f"{key}: {json.dumps(dict(value), ensure_ascii=False)}"


@dataclass(frozen=True)
class Row:
    """What a backend reads: an item and its embedding, if it has one."""

    item: Item
    vector: list[float] | None = None


class Store(ABC):
    """Namespaced JSON items shared across conversations. Backends implement the `_`-methods;
    the checks (store_checks.py), filters, keyword and semantic ranking are here, the same for
    all, so no backend takes or refuses what another would not."""

    embedder: Embedder | None = None
    """Set for semantic search: items are embedded when put, queries when searched."""

    @property
    @abstractmethod
    def description(self) -> str:
        """Where the items live, safe to print (no password)."""

    async def put(self, namespace: Iterable[str], key: str, value: Mapping[str, Any]) -> None:
        """Create or replace the item at (namespace, key): an upsert, so doing it twice leaves
        one item."""
        ns, text = namespace_of(namespace), value_json(value)
        check_address(ns, check_key(key))
        vector = None
        if self.embedder is not None:
            (vector,) = await self.embedder.embed([item_text(key, json.loads(text))])
        await self._put(ns, key, text, vector)

    async def get(self, namespace: Iterable[str], key: str) -> Item | None:
        ns = namespace_of(namespace)
        check_address(ns, check_key(key))
        return await self._get(ns, key)

    async def delete(self, namespace: Iterable[str], key: str) -> bool:
        """Delete one item; whether there was one."""
        ns = namespace_of(namespace)
        check_address(ns, check_key(key))
        return await self._delete(ns, key)

    async def delete_prefix(self, prefix: Iterable[str]) -> int:
        """Delete every item whose namespace starts with `prefix` (how a team forgets a user:
        `delete_prefix(("users", user_id))`); how many went."""
        return await self._delete_prefix(namespace_of(prefix))

    async def search(self, prefix: Iterable[str] = (), *, query: str | None = None,
                     filter: Mapping[str, Any] | None = None, limit: int = 10,
                     offset: int = 0) -> list[SearchItem]:
        """Items under `prefix` whose value has `filter`'s fields, ranked by `query`: by
        meaning when the store has an embedder, else by the share of its words they hold
        (items holding none are left out). Without a query: newest first."""
        ns = namespace_of(prefix, allow_empty=True)
        check_page(limit, offset)
        if query is not None:
            check_text(query, "the query")
        rows = [r for r in await self._rows(ns) if matches(r.item.value, filter)]
        if not query or not query.strip():
            rows.sort(key=lambda r: (r.item.updated_at, r.item.namespace, r.item.key), reverse=True)
            return [scored(r.item, None) for r in rows[offset:offset + limit]]
        if self.embedder is not None:
            (wanted,) = await self.embedder.embed([query])
            ranked = [(cosine(wanted, r.vector), r.item) for r in rows if r.vector]
        else:
            ranked = [(keyword_score(r.item, query), r.item) for r in rows]
            ranked = [(s, i) for s, i in ranked if s > 0]
        ranked.sort(key=lambda pair: (pair[0], pair[1].updated_at, pair[1].namespace, pair[1].key),
                    reverse=True)
        return [scored(i, s) for s, i in ranked[offset:offset + limit]]

    async def namespaces(self, prefix: Iterable[str] = ()) -> list[Namespace]:
        """The namespaces holding items under `prefix`, sorted."""
        return sorted({r.item.namespace for r in await self._rows(namespace_of(prefix, allow_empty=True))})

    async def close(self) -> None:  # noqa: B027 - a backend without connections has nothing to do
        """Release connections."""

    @abstractmethod
    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None: ...

    @abstractmethod
    async def _get(self, namespace: Namespace, key: str) -> Item | None: ...

    @abstractmethod
    async def _delete(self, namespace: Namespace, key: str) -> bool: ...

    @abstractmethod
    async def _delete_prefix(self, prefix: Namespace) -> int: ...

    @abstractmethod
    async def _rows(self, prefix: Namespace) -> list[Row]:
        """Every item whose namespace is `prefix` or starts with it."""


def scored(item: Item, score: float | None) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
