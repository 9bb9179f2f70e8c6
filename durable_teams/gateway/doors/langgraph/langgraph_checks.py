"""The LangGraph door's small fields read strictly, for every route: a page (`limit`,
`offset`, from a JSON body or a query string), an optional string, flag or object. A value of
the wrong type is a 400 naming the field, never a 500 or a silent default. Pure: no Temporal
calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from durable_teams.gateway.core.requests import BadRequest

MAX_LIMIT = 1000
"""The most items one page holds."""


def whole(source: Mapping[str, Any], name: str, default: int, low: int = 0, high: int = 10**9) -> int:
    """`name` as a whole number from `low` to `high` (a JSON integer, or the digits of a query
    parameter); `default` when it is left out or null."""
    value = source.get(name)
    if value is None:
        return default
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 12:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"'{name}' is a whole number from {low} to {high:,}, not {str(value)[:40]!r}")
    return value


def page(source: Mapping[str, Any], default_limit: int = 10) -> tuple[int, int]:
    """(offset, limit) of a listing."""
    return whole(source, "offset", 0), whole(source, "limit", default_limit, 1, MAX_LIMIT)


def optional_text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"'{name}' is a string")
    return value


def optional_flag(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadRequest(f"'{name}' is true or false")
    return value


def optional_object(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    """An object field; {} when left out or null."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"'{name}' is an object")
    return value
