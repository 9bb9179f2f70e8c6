"""JSON schemas for plain Python functions, and validation of a model's arguments against them.

A pydantic model is built once per function from its signature, so `list[...]`, `dict[...]`,
`Optional`, `Literal`, `Enum`, defaults and pydantic models as parameters all get the schema a
model needs, and the same model validates (and converts) the arguments before the call.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

INJECTED = ("context_variables", "idempotency_key")
"""Parameters the runner fills in; the model never sees them."""


class ToolArgumentsError(ValueError):
    """The model's arguments cannot be used: the message is written for the model to act on."""


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    match = re.search(r"^(Args|Arguments|Parameters):\s*$", doc, flags=re.MULTILINE)
    if not match:
        return doc.strip(), {}
    summary = doc[: match.start()].strip()
    params: dict[str, str] = {}
    current = None
    for line in doc[match.end():].splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith(":"):
            break  # next section (Returns:, Raises:)
        found = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if found:
            current = found.group(1)
            params[current] = found.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return summary, params


@functools.cache
def arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of `fn`'s parameters (injected ones left out)."""
    hints = typing.get_type_hints(fn)
    _, docs = _docstring_parts(fn)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name in INJECTED or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        default = ... if param.default is param.empty else param.default
        fields[name] = (annotation, Field(default, description=docs.get(name)))
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )


def function_schema(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """(description, JSON schema of the parameters) for `fn`, ready for Chat Completions."""
    description, _ = _docstring_parts(fn)
    schema = arguments_model(fn).model_json_schema()
    schema.pop("title", None)
    schema.pop("additionalProperties", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return description, schema


def validate_arguments(fn: Callable[..., Any], raw: str) -> dict[str, Any]:
    """Parse the model's JSON argument string and validate it; returns typed keyword args."""
    name = getattr(fn, "__name__", "tool")
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as err:
        raise ToolArgumentsError(f"Invalid JSON in arguments for tool '{name}': {err}") from None
    if not isinstance(data, dict):
        raise ToolArgumentsError(
            f"Arguments for tool '{name}' must be a JSON object, got {type(data).__name__}"
        )
    try:
        parsed = arguments_model(fn).model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
        )
        raise ToolArgumentsError(f"Invalid arguments for tool '{name}': {problems}") from None
    # Attribute access (not model_dump) keeps nested pydantic models and Enum members typed.
    return {field: getattr(parsed, field) for field in type(parsed).model_fields}
