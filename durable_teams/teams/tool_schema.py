"""JSON schemas for plain Python functions, and validation of a model's arguments against them.

A pydantic model is built once per function from its signature, so `list[...]`, `dict[...]`,
`Optional`, `Literal`, `Enum`, defaults and pydantic models as parameters all get the schema a
model needs, and the same model validates (and converts) the arguments before the call.
Pure: no Temporal, no I/O.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from durable_teams.memory.store import Store

INJECTED = ("context_variables", "idempotency_key")
"""Parameters the runner fills in; the model never sees them (and may not send them), with
every parameter annotated `Store` (the worker's memory store, `store_params`)."""

MAX_LISTED_ERRORS = 10
"""Field errors listed in one message; a model fixes the first few and tries again."""

_SECTION = re.compile(r"^(Args|Arguments|Parameters):\s*$", flags=re.MULTILINE)
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number",
               bool: "boolean", type(None): "null"}


class ToolArgumentsError(ValueError):
    """The model's arguments cannot be used: the message is written for the model to act on."""


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """(description, {parameter: text}) from a docstring with an optional Google `Args:` section.

    The description is everything before `Args:`; parameter texts may continue on more-indented
    lines; the section ends at the first line indented less than its entries (e.g. `Returns:`).
    """
    doc = inspect.getdoc(fn) or ""
    match = _SECTION.search(doc)
    if not match:
        return doc.strip(), {}
    params: dict[str, str] = {}
    current: str | None = None
    entry_indent: int | None = None
    for line in doc[match.end():].splitlines():
        if not line.strip():
            continue
        indent = _indent(line)
        if entry_indent is None:
            entry_indent = indent
        if indent < entry_indent or indent == 0:
            break  # the next section
        found = _ARG_LINE.match(line.strip()) if indent == entry_indent else None
        if found:
            current = found.group(1)
            params[current] = found.group(2).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
    return doc[: match.start()].strip(), params


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations; an annotation that cannot be resolved is treated as Any."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # a forward reference to a name that is not importable from the module
        hints: dict[str, Any] = {}
        namespace = getattr(fn, "__globals__", {})
        for name, param in inspect.signature(fn).parameters.items():
            annotation = param.annotation
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, namespace)  # noqa: S307 - the function's own code
                except Exception:
                    annotation = Any
            hints[name] = Any if annotation is param.empty else annotation
        return hints


def _is_store(annotation: Any) -> bool:
    """`Store`, a subclass, or `Store | None`."""
    if isinstance(annotation, type):
        return issubclass(annotation, Store)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], Store)


@functools.cache
def store_params(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters of `fn` annotated `Store`: the tool activity passes the worker's store
    (LangGraph's `InjectedStore`); the model never sees them."""
    hints = _type_hints(fn)
    return tuple(name for name in inspect.signature(fn).parameters if _is_store(hints.get(name)))


def _awkward(name: str) -> bool:
    """Names pydantic cannot use as field names directly (private, or a BaseModel attribute)."""
    return name.startswith("_") or hasattr(BaseModel, name)


@functools.cache
def arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of `fn`'s parameters (injected ones and *args/**kwargs left out).

    Every field carries the parameter's name as its alias, so names such as `schema`, `json`
    or `_id` work; schemas, validation and error locations all use the alias.
    """
    hints = _type_hints(fn)
    _, docs = docstring_parts(fn)
    fields: dict[str, Any] = {}
    injected = (*INJECTED, *store_params(fn))
    for index, (name, param) in enumerate(inspect.signature(fn).parameters.items()):
        if name in injected or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        default = param.default
        extra: dict[str, Any] = {"description": docs[name]} if name in docs else {}
        if isinstance(default, FieldInfo):  # `n: int = Field(ge=1)`: its default, constraints
            annotation = Annotated[annotation, default]
        else:
            extra["default"] = ... if default is param.empty else default
        field_name = f"p{index}_" if _awkward(name) else name
        fields[field_name] = (annotation, Field(alias=name, **extra))
    config = ConfigDict(extra="forbid", protected_namespaces=())
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{_name(fn)}_arguments", __config__=config, **fields
    )


def function_schema(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """(description, JSON schema of the parameters) for `fn`, ready for Chat Completions.

    An object schema with `properties` and `required`, without pydantic's titles on the
    parameters; nested models stay in `$defs` (which OpenAI accepts).
    """
    description, _ = docstring_parts(fn)
    schema = arguments_model(fn).model_json_schema()
    schema.pop("title", None)
    schema.pop("additionalProperties", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return description, schema


def _field_errors(err: ValidationError) -> str:
    errors = err.errors(include_url=False)
    listed = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in errors[:MAX_LISTED_ERRORS]
    ]
    if len(errors) > MAX_LISTED_ERRORS:
        listed.append(f"and {len(errors) - MAX_LISTED_ERRORS} more")
    return "; ".join(listed)


def canonical_arguments(fn: Callable[..., Any], arguments: dict[str, Any]) -> str:
    """Validated arguments (`validate_arguments`'s) as one JSON text, defaults filled in and
    keys sorted: the same for every way of writing the same call (a cached tool's key)."""
    model = arguments_model(fn)
    data = model.model_validate(arguments).model_dump(mode="json", by_alias=True)
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def validate_arguments(
    fn: Callable[..., Any], raw: str, *, tool_name: str | None = None
) -> dict[str, Any]:
    """Parse the model's JSON argument string and validate it against `fn`'s signature.

    Returns keyword arguments with Python types (pydantic model instances, Enum members).
    Raises `ToolArgumentsError` with a message the model can act on, naming the tool
    (`tool_name`, or the function's name). An empty string is `{}`.
    """
    name = tool_name or _name(fn)
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as err:
        raise ToolArgumentsError(f"Invalid JSON in arguments for tool '{name}': {err}") from None
    if not isinstance(data, dict):
        kind = _JSON_TYPES.get(type(data), type(data).__name__)
        raise ToolArgumentsError(f"Arguments for tool '{name}' must be a JSON object, got {kind}")
    model = arguments_model(fn)
    try:
        parsed = model.model_validate(data)
    except ValidationError as err:
        raise ToolArgumentsError(f"Invalid arguments for tool '{name}': {_field_errors(err)}") from None
    # Attribute access (not model_dump) keeps nested pydantic models and Enum members typed.
    return {info.alias or field: getattr(parsed, field) for field, info in model.model_fields.items()}
