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


# -- hostile values: every backend takes the same ones and refuses the same ones ---------------

MB = 1024 * 1024


def nested(depth: int) -> dict[str, object]:
    """A value `depth` levels deep: {"a": {"a": ... {"a": 1}}}."""
    value: dict[str, object] = {"a": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def of_json_size(size: int) -> dict[str, str]:
    """A value whose JSON text is exactly `size` bytes ({"t": "yyy..."} is 9 bytes + the y's)."""
    return {"t": "y" * (size - 9)}


LABELS = ["org/alice", "a.b", "..", "u1%", "u_1", "50%_off", "naïve", "日本語", "🙂", "back\\slash",
          "'; DROP TABLE memory_items; --", "\" OR 1=1 --", "%", "with space", "LIKE 'x%'"]
KEPT_VALUES = [
    {"text": "'); DELETE FROM durable_teams_memory; --", "k%": "a_b", "🙂": ["日本", "é"]},
    {"text": "tab\tnewline\ncontrol\x01\x1f done", "quote": "\"'\\", "line sep": "\u2028\u2029"},
    nested(100),                                       # the deepest value taken
    of_json_size(MB),                                  # the largest value taken
    {"big": 1e308, "small": 5e-324, "exact": 2.0**53, "int": 10**40, "neg": -1.5e300},
]
REFUSED_VALUES = [
    ({"text": "a\x00b"}, "holds the NUL character"),
    ({"a\x00": "x"}, "holds the NUL character"),
    ({"text": "lone \ud800 surrogate"}, "lone surrogate"),
    ({"\udcff": "x"}, "lone surrogate"),
    ({"list": ["ok", ["\udc80"]]}, "lone surrogate"),
    (nested(101), "nested more than 100 levels deep"),
    (nested(1200), "nested more than 100 levels deep"),
    (of_json_size(MB + 1), "1,048,577 bytes as JSON, over the 1,048,576-byte limit"),
    ({1: "x"}, "field names are strings"),
    ({"x": float("inf")}, "cannot be stored as JSON"),
    ({"x": {1, 2}}, "cannot be stored as JSON"),
]


class HostileContract:
    """The values, keys and namespaces a careless or hostile tool may send, on a `store`."""

    @pytest.mark.parametrize("label", LABELS)
    async def test_any_label_and_key_round_trip_exactly(self, store: Store, label: str) -> None:
        ns = ("users", label, "memories")
        await store.put(ns, label, {"text": label})
        await store.put(("users", label + "x"), "other", {"text": "a neighbour"})  # not under ns
        got = await store.get(ns, label)
        assert got is not None and (got.namespace, got.key, got.value) == (ns, label, {"text": label})
        under = await store.search(("users", label))
        assert [(i.namespace, i.key) for i in under] == [(ns, label)]
        assert await store.namespaces(("users", label)) == [ns]
        assert await store.delete_prefix(("users", label)) == 1
        assert [i.key for i in await store.search(())] == ["other"]

    @pytest.mark.parametrize("value", KEPT_VALUES, ids=["sql", "controls", "depth-100", "1MB", "numbers"])
    async def test_values_at_the_limits_round_trip(self, store: Store, value: dict[str, object]) -> None:
        await store.put(("t",), "k", value)
        got = await store.get(("t",), "k")
        assert got is not None and got.value == value
        assert (await store.search(("t",)))[0].value == value

    @pytest.mark.parametrize(("value", "message"), REFUSED_VALUES,
                             ids=[m.split()[0] + str(n) for n, (_, m) in enumerate(REFUSED_VALUES)])
    async def test_a_value_no_backend_can_keep_is_the_same_store_error(
            self, store: Store, value: dict[object, object], message: str) -> None:
        with pytest.raises(StoreError, match=re.escape(message)):
            await store.put(("t",), "k", value)
        assert await store.search(()) == []  # nothing written

    @pytest.mark.parametrize(("namespace", "key", "message"), [
        (("t",), "a\x00b", "holds the NUL character"),
        (("t",), "\ud800", "lone surrogate"),
        (("t", "\udcff"), "k", "lone surrogate"),
        (("t", "a\x00"), "k", "control character"),
        (("t",), "k" * 513, "at most 512 characters"),
        (("t", "x" * 257), "k", "at most 256 characters"),
        (("🙂" * 256, "🙂" * 256), "k", "2,051 bytes as UTF-8, over the 2,048-byte limit"),
    ])
    async def test_a_key_or_namespace_no_backend_can_keep_is_the_same_store_error(
            self, store: Store, namespace: tuple[str, ...], key: str, message: str) -> None:
        for call in (lambda: store.put(namespace, key, {"v": 1}), lambda: store.get(namespace, key),
                     lambda: store.delete(namespace, key)):
            with pytest.raises(StoreError, match=re.escape(message)):
                await call()
        assert await store.search(()) == []

    async def test_the_longest_key_and_namespace_are_kept(self, store: Store) -> None:
        # 1,020 + 510 + 512 bytes and the separators, none repeating (an index may compress repeats)
        ns = ("".join(chr(0x1F300 + n) for n in range(255)), "".join(chr(0x4E00 + 7 * n) for n in range(170)))
        key = "".join(chr(33 + (n * 37) % 94) for n in range(512))
        await store.put(ns, key, {"v": 1})
        got = await store.get(ns, key)
        assert got is not None and got.namespace == ns and got.key == key

    async def test_a_query_that_is_not_valid_text_is_a_store_error(self, store: Store) -> None:
        with pytest.raises(StoreError, match="the query holds '\\\\udcff', a lone surrogate"):
            await store.search(("t",), query="colour \udcff")

    async def test_keyword_search_splits_words_on_underscores_and_punctuation(self, store: Store) -> None:
        await store.put(("users", "u-42", "memories"), "favorite_color", {"text": "blue"})
        await store.put(("users", "u-42", "memories"), "e-mail.address", {"text": "a@example.org"})
        await store.put(("users", "u-42", "memories"), "city", {"text": "Lives_in Lyon, near the Rhône."})
        for query, keys in [("color", ["favorite_color"]), ("favorite color", ["favorite_color"]),
                            ("favorite_color", ["favorite_color"]), ("mail", ["e-mail.address"]),
                            ("example", ["e-mail.address"]), ("lyon", ["city"]), ("LIVES", ["city"]),
                            ("ｌｙｏｎ", ["city"]), ("rhône", ["city"]), ("colo", [])]:
            found = await store.search(("users", "u-42"), query=query)
            assert [i.key for i in found] == keys, query
