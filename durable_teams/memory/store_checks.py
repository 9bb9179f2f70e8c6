"""What the memory store accepts, checked in one place for every backend (store.py calls these
before a backend sees anything), so SQLite, PostgreSQL and the in-memory store take the same
values and refuse the same ones with the same `StoreError`:

- a namespace: a tuple of 1+ labels, each a non-empty string of at most MAX_LABEL_CHARS
  characters without control characters (the backends join labels with one);
- a key: a non-empty string of at most MAX_KEY_CHARS characters without NUL;
- a namespace and key together at most MAX_ADDRESS_BYTES as UTF-8 (PostgreSQL's index holds
  them; a longer pair would fail there only);
- a value: a JSON object (string field names) nested at most MAX_DEPTH levels, at most
  MAX_VALUE_BYTES as JSON, without NUL in any text (PostgreSQL's JSONB cannot hold it);
- no lone surrogate (text that is not valid Unicode, e.g. undecodable bytes of a command line)
  anywhere: no backend could write it.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

Namespace = tuple[str, ...]

MAX_LABEL_CHARS = 256
MAX_KEY_CHARS = 512
MAX_ADDRESS_BYTES = 2048
"""A namespace's labels and the key, as UTF-8: PostgreSQL's primary-key index holds them."""
MAX_VALUE_BYTES = 1024 * 1024
"""One item's value as JSON; a tool that needs more keeps a reference, not the data."""
MAX_DEPTH = 100
"""Objects and lists inside one another (JSON parsers recurse; 100 is ample for any record)."""
MAX_LIMIT = 1000
LARGEST_EXACT_FLOAT = 2.0**53


class StoreError(ValueError):
    """A namespace, key, value or query the store cannot take; the message says why."""


def check_text(text: str, what: str) -> str:
    """`text` is valid Unicode (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise StoreError(f"{what} holds {text[err.start:err.end]!r}, a lone surrogate (not valid "
                         "Unicode text, e.g. bytes that are not UTF-8)") from None
    return text


def namespace_of(namespace: Iterable[str] | str, *, allow_empty: bool = False) -> Namespace:
    """`namespace` checked: a tuple of non-empty strings without control characters."""
    if isinstance(namespace, str):
        raise StoreError(f"a namespace is a tuple of strings, not the string {namespace!r}")
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise StoreError("a namespace needs at least one label, e.g. ('users', 'u-42')")
    for label in labels:
        if not isinstance(label, str) or not label or len(label) > MAX_LABEL_CHARS:
            raise StoreError(f"namespace label {label!r}: a non-empty string of at most "
                             f"{MAX_LABEL_CHARS} characters")
        if re.search(r"[\x00-\x1f]", label):
            raise StoreError(f"namespace label {label!r} holds a control character")
        check_text(label, f"namespace label {label!r}")
    return labels


def check_key(key: str) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise StoreError(f"key {key!r}: a non-empty string of at most {MAX_KEY_CHARS} characters")
    if "\x00" in key:
        raise StoreError(f"key {key!r} holds the NUL character")
    return check_text(key, f"key {key!r}")


def check_address(namespace: Namespace, key: str) -> None:
    size = sum(len(label.encode()) + 1 for label in namespace) + len(key.encode())
    if size > MAX_ADDRESS_BYTES:
        raise StoreError(f"the namespace and key are {size:,} bytes as UTF-8, over the "
                         f"{MAX_ADDRESS_BYTES:,}-byte limit")


def value_json(value: Mapping[str, Any]) -> str:
    """The value as JSON text, checked: an object, JSON-encodable, at most MAX_VALUE_BYTES."""
    if not isinstance(value, Mapping):
        raise StoreError(f"a value is a JSON object (a dict), not a {type(value).__name__}")
    data = plain(value)
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as err:
        raise StoreError(f"the value cannot be stored as JSON ({err})") from None
    if len(text.encode()) > MAX_VALUE_BYTES:
        raise StoreError(f"the value is {len(text.encode()):,} bytes as JSON, over the "
                         f"{MAX_VALUE_BYTES:,}-byte limit")
    return text


def plain(value: Any, depth: int = 1) -> Any:
    """`value` as plain JSON data, each text checked; a float too large to have a fraction
    becomes the integer it equals (PostgreSQL's JSONB gives it back as one)."""
    if isinstance(value, str):
        return _checked_string(value, "text")
    if isinstance(value, Mapping | list | tuple) and depth > MAX_DEPTH:
        raise StoreError(f"the value is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, Mapping):
        out = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise StoreError(f"the value's field names are strings, not {name!r}")
            out[_checked_string(name, "field name")] = plain(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) >= LARGEST_EXACT_FLOAT:
        return int(value)
    return value  # numbers, booleans and None; anything else json.dumps refuses


def _checked_string(text: str, what: str) -> str:
    if "\x00" in text:
        raise StoreError(f"a {what} of the value holds the NUL character ({text[:40]!r}); "
                         "PostgreSQL cannot store it")
    return check_text(text, f"a {what} of the value")


def check_page(limit: int, offset: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise StoreError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise StoreError(f"offset must be an integer of 0 or more, got {offset!r}")
