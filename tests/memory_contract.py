"""What every memory store backend does the same (tests/test_memory_store.py runs it on the
in-memory and SQLite stores, tests/test_memory_postgres.py on a real PostgreSQL)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest

from durable_teams.memory.store import Embedder, Store, StoreError


class WordCounts(Embedder):
    """A toy embedder: one dimension per word of a fixed vocabulary (meaning without a model)."""

    VOCAB = ("color", "colour", "blue", "food", "pizza", "sushi", "language", "french")
    SAME = {"colour": "color", "shade": "color", "hue": "color", "eat": "food", "dinner": "food"}

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            words = [self.SAME.get(w, w) for w in re.findall(r"\w+", text.lower())]
            out.append([float(words.count(v)) for v in self.VOCAB])
        return out


class StoreContract:
    """Tests for a `store` fixture (an empty store)."""

    async def test_put_is_an_upsert_so_a_retried_write_leaves_one_item(self, store: Store) -> None:
        ns = ("users", "u1", "preferences")
        await store.put(ns, "color", {"value": "blue"})
        first = await store.get(ns, "color")
        await asyncio.sleep(0.01)
        await store.put(ns, "color", {"value": "blue"})  # the same write, retried
        await store.put(ns, "color", {"value": "green"})
        items = await store.search(("users", "u1"))
        assert [(i.namespace, i.key, i.value) for i in items] == [(ns, "color", {"value": "green"})]
        again = await store.get(ns, "color")
        assert first is not None and again is not None
        assert again.created_at == first.created_at and again.updated_at > first.updated_at
        assert await store.get(ns, "missing") is None

    async def test_search_by_prefix_filter_and_keyword(self, store: Store) -> None:
        await store.put(("users", "u1", "prefs"), "food", {"likes": "pizza", "diet": {"vegan": False}})
        await store.put(("users", "u1", "prefs"), "lang", {"likes": "French", "diet": {"vegan": True}})
        await store.put(("users", "u10", "prefs"), "food", {"likes": "sushi"})
        await store.put(("users",), "top", {"likes": "nothing"})
        under_u1 = await store.search(("users", "u1"))
        assert sorted(i.key for i in under_u1) == ["food", "lang"]  # not u10's: labels, not text
        assert [i.key for i in await store.search(("users",), filter={"likes": "sushi"})] == ["food"]
        vegan = await store.search(("users", "u1"), filter={"diet": {"vegan": True}})
        assert [i.key for i in vegan] == ["lang"]
        found = await store.search(("users",), query="french language")
        assert [(i.key, i.score) for i in found] == [("lang", 0.5)]
        assert await store.search(("users",), query="nothing here at all zzz") != []
        assert await store.search(("users",), query="qqq") == []
        page = await store.search(("users",), limit=2, offset=1)
        assert len(page) == 2
        assert await store.namespaces(("users",)) == [("users",), ("users", "u1", "prefs"), ("users", "u10", "prefs")]

    async def test_delete_and_forget_a_user_by_prefix(self, store: Store) -> None:
        await store.put(("users", "u1", "prefs"), "a", {"x": 1})
        await store.put(("users", "u1", "memories"), "b", {"x": 2})
        await store.put(("users", "u10", "prefs"), "c", {"x": 3})
        await store.put(("users", "u1%", "prefs"), "d", {"x": 4})  # LIKE's wildcard is just a letter
        assert await store.delete(("users", "u1", "prefs"), "a") is True
        assert await store.delete(("users", "u1", "prefs"), "a") is False
        assert await store.delete_prefix(("users", "u1")) == 1
        assert sorted(i.key for i in await store.search(())) == ["c", "d"]

    async def test_values_round_trip_as_json(self, store: Store) -> None:
        value = {"text": "naïve café ☕", "n": 1.5, "list": [1, None, True], "nested": {"a": {"b": "c"}}}
        await store.put(("t",), "k", value)
        got = await store.get(("t",), "k")
        assert got is not None and got.value == value and got.namespace == ("t",)

    async def test_bad_input_is_a_store_error_naming_the_problem(self, store: Store) -> None:
        cases = [
            (store.put("users", "k", {}), "a tuple of strings"),
            (store.put((), "k", {}), "at least one label"),
            (store.put(("a", ""), "k", {}), "non-empty string"),
            (store.put(("a\x1fb",), "k", {}), "control character"),
            (store.put(("a",), "", {}), "key ''"),
            (store.put(("a",), "k", ["not", "a", "dict"]), "JSON object"),  # type: ignore[arg-type]
            (store.put(("a",), "k", {"x": float("nan")}), "cannot be stored as JSON"),
            (store.put(("a",), "k", {"x": "y" * (1024 * 1024)}), "over the 1,048,576-byte limit"),
            (store.search(("a",), limit=0), "limit must be"),
        ]
        for call, message in cases:
            with pytest.raises(StoreError, match=message):
                await call
        assert await store.search(()) == []

    async def test_semantic_search_ranks_by_meaning(self, store: Store) -> None:
        store.embedder = embedder = WordCounts()
        try:
            await store.put(("u",), "color", {"text": "favorite color blue"})
            await store.put(("u",), "food", {"text": "likes pizza"})
            found = await store.search(("u",), query="which hue?", limit=1)
            assert [i.key for i in found] == ["color"]
            found = await store.search(("u",), query="dinner")
            assert [i.key for i in found][0] == "food"
            assert embedder.calls == 4
        finally:
            store.embedder = None
