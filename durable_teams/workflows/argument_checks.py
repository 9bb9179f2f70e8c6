"""Arguments checked against a tool's JSON schema in the workflow (pure: no Temporal, no I/O):
a person's edit of a call paused at a breakpoint is refused, naming the field, before it is
taken, as the tool's own validation would refuse it on the worker (teams/tool_schema.py).

The schema is the one the model sees (`ToolSpec.parameters`: pydantic's for our tools, the
server's `inputSchema` for an MCP tool). What it checks is the subset those schemas use: types,
`required`, `properties` (at the top, a name that is not a parameter is refused: parameters the
runner fills in, such as `context_variables`, are not in the schema), `enum` / `const`,
`anyOf` / `oneOf` / `allOf`, `$ref` into `$defs`, `items`, and numeric and length bounds. Types
are read as leniently as pydantic's lax mode reads them ("5" is an integer), so nothing a tool
would take is refused; keywords it does not know pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["arguments_problem"]

MAX_DEPTH = 64
"""Nesting followed at most (a `$ref` cycle, a deep value): deeper passes, the tool decides."""


def arguments_problem(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's `schema` (naming the field), or None."""
    known = schema.get("properties")
    if isinstance(known, Mapping):
        for name in arguments:
            if name not in known:
                return f"'{name}' is not a parameter of the tool (its parameters: {', '.join(known) or 'none'})"
    return _problem(schema, dict(arguments), "", schema.get("$defs") or {}, 0)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _at(path: str) -> str:
    return f"'{path}'" if path else "the arguments"


def _integer(value: Any) -> bool:
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, str):
        try:
            return float(value.strip()).is_integer()
        except ValueError:
            return False
    return False


def _number(value: Any) -> bool:
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            float(value.strip())
        except ValueError:
            return False
        return True
    return False


BOOLEAN_TEXTS = {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n"}
TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": _integer,
    "number": _number,
    "boolean": lambda v: isinstance(v, bool) or v in (0, 1) or (
        isinstance(v, str) and v.strip().lower() in BOOLEAN_TEXTS),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _problem(schema: Any, value: Any, path: str, defs: Mapping[str, Any], depth: int) -> str | None:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _problem(defs.get(ref.removeprefix("#/$defs/")), value, path, defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            found = [_problem(o, value, path, defs, depth + 1) for o in options]
            if all(found):
                return next(p for p in found if p)
    for part in schema.get("allOf") or []:
        problem = _problem(part, value, path, defs, depth + 1)
        if problem:
            return problem
    return _typed(schema, value, path, defs, depth)


def _typed(schema: Mapping[str, Any], value: Any, path: str, defs: Mapping[str, Any], depth: int) -> str | None:
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    known = [k for k in kinds if k in TYPES]
    if known and not any(TYPES[k](value) for k in known):
        return f"{_at(path)}: {' or '.join(known)} expected, not {_shown(value)}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{_at(path)}: one of {_shown(schema['enum'])} expected, not {_shown(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{_at(path)}: {_shown(schema['const'])} expected, not {_shown(value)}"
    if isinstance(value, dict):
        return _object(schema, value, path, defs, depth)
    if isinstance(value, list):
        return _array(schema, value, path, defs, depth)
    return _bounds(schema, value, path)


def _object(schema: Mapping[str, Any], value: dict[str, Any], path: str, defs: Mapping[str, Any],
            depth: int) -> str | None:
    given = schema.get("properties")
    properties: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    for name in schema.get("required") or []:
        if name not in value:
            return f"'{_join(path, name)}': required, and missing"
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            problem = _problem(properties[name], item, _join(path, name), defs, depth + 1)
        elif extra is False:
            problem = f"'{_join(path, name)}': not a field of {_at(path)}"
        else:
            problem = _problem(extra, item, _join(path, name), defs, depth + 1)
        if problem:
            return problem
    return None


def _array(schema: Mapping[str, Any], value: list[Any], path: str, defs: Mapping[str, Any],
           depth: int) -> str | None:
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and len(value) < low or isinstance(high, int) and len(value) > high:
        return f"{_at(path)}: {len(value)} items, outside {low or 0} to {high if high is not None else 'any'}"
    for n, item in enumerate(value):
        problem = _problem(schema.get("items"), item, f"{path}[{n}]", defs, depth + 1)
        if problem:
            return problem
    return None


def _bounds(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    if isinstance(value, str):
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low or isinstance(high, int) and len(value) > high:
            return f"{_at(path)}: {len(value)} characters, outside {low or 0} to {high if high is not None else 'any'}"
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    checks = (("minimum", lambda b: value >= b), ("maximum", lambda b: value <= b),
              ("exclusiveMinimum", lambda b: value > b), ("exclusiveMaximum", lambda b: value < b))
    for key, holds in checks:
        bound = schema.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and not holds(bound):
            return f"{_at(path)}: {_shown(value)} is outside the {key} {bound}"
    return None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
