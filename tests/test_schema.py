"""Tool schemas from Python signatures, and argument validation (pure, no Temporal)."""

from __future__ import annotations

import enum
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from durable_teams.examples.faang import add
from durable_teams.teams.tool_schema import (
    ToolArgumentsError,
    arguments_model,
    docstring_parts,
    function_schema,
    validate_arguments,
)

pytestmark = pytest.mark.pure


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip_code: str


def everything(
    names: list[str],
    counts: dict[str, int],
    mode: Literal["fast", "slow"],
    color: Color,
    address: Address,
    note: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
    limit: int | None = 10,
    context_variables: dict | None = None,
    idempotency_key: str = "",
) -> str:
    """Do everything.

    Some more detail on a second paragraph.

    Args:
        names: Who to greet,
            on two lines.
        limit (int): At most this many.

    Returns:
        Nothing useful.
    """
    return ""


def untyped(thing, flag=False):  # type: ignore[no-untyped-def]
    """No annotations at all."""


def awkward(schema: str, json: int = 1, model_name: str = "m") -> None:
    """Parameter names that clash with BaseModel attributes or protected namespaces."""


def constrained(n: int = Field(ge=1, description="How many.")) -> None:
    """A pydantic Field as a default."""


def test_seed_add_schema_is_what_the_model_needs() -> None:
    description, schema = function_schema(add)
    assert description == "Add two numbers."
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }


def test_description_stops_at_args_and_args_become_property_descriptions() -> None:
    description, schema = function_schema(everything)
    assert description == "Do everything.\n\nSome more detail on a second paragraph."
    props = schema["properties"]
    assert props["names"]["description"] == "Who to greet, on two lines."
    assert props["limit"]["description"] == "At most this many."
    assert "description" not in props["counts"]
    _, docs = docstring_parts(everything)
    assert set(docs) == {"names", "limit"}  # `Returns:` ends the section


def test_containers_optional_literal_enum_and_model() -> None:
    _, schema = function_schema(everything)
    assert "title" not in schema
    props = schema["properties"]
    assert props["names"]["type"] == "array" and props["names"]["items"] == {"type": "string"}
    assert props["counts"]["type"] == "object"
    assert props["counts"]["additionalProperties"] == {"type": "integer"}
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["color"] == {"$ref": "#/$defs/Color"}
    assert schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert props["address"] == {"$ref": "#/$defs/Address"}
    assert set(schema["$defs"]["Address"]["required"]) == {"street", "zip_code"}
    assert {"type": "null"} in props["note"]["anyOf"] and {"type": "string"} in props["note"]["anyOf"]
    assert {"type": "null"} in props["limit"]["anyOf"] and props["limit"]["default"] == 10


def test_defaults_are_optional_and_injected_parameters_are_hidden() -> None:
    _, schema = function_schema(everything)
    assert schema["required"] == ["names", "counts", "mode", "color", "address"]
    assert set(schema["properties"]) == {"names", "counts", "mode", "color", "address", "note", "limit"}


def test_unannotated_parameters_are_any() -> None:
    description, schema = function_schema(untyped)
    assert description == "No annotations at all."
    assert schema["properties"]["thing"] == {}
    assert schema["properties"]["flag"] == {"default": False}
    assert schema["required"] == ["thing"]


def test_no_parameters_gives_an_empty_object() -> None:
    def ping() -> str:
        return "pong"

    assert function_schema(ping) == ("", {"type": "object", "properties": {}, "required": []})
    assert validate_arguments(ping, "") == {}
    assert validate_arguments(ping, "  ") == {}
    assert validate_arguments(ping, "{}") == {}


def test_awkward_names_keep_their_names() -> None:
    _, schema = function_schema(awkward)
    assert set(schema["properties"]) == {"schema", "json", "model_name"}
    assert schema["required"] == ["schema"]
    assert validate_arguments(awkward, '{"schema": "s", "json": 2}') == {
        "schema": "s", "json": 2, "model_name": "m"}


def test_field_default_keeps_constraints() -> None:
    _, schema = function_schema(constrained)
    assert schema["properties"]["n"]["minimum"] == 1
    assert schema["properties"]["n"]["description"] == "How many."
    assert schema["required"] == ["n"]
    with pytest.raises(ToolArgumentsError, match="n: Input should be greater than or equal to 1"):
        validate_arguments(constrained, '{"n": 0}')


def test_model_is_built_once_per_function() -> None:
    assert arguments_model(everything) is arguments_model(everything)


def test_validation_converts_types() -> None:
    kwargs = validate_arguments(everything, '{"names": ["a"], "counts": {"x": "2"}, "mode": "fast", '
                                           '"color": "blue", "address": {"street": "s", "zip_code": "1"}}')
    assert kwargs["color"] is Color.BLUE
    assert isinstance(kwargs["address"], Address) and kwargs["address"].street == "s"
    assert kwargs["counts"] == {"x": 2}
    assert kwargs["limit"] == 10 and kwargs["note"] is None
    assert "context_variables" not in kwargs and "idempotency_key" not in kwargs
    assert validate_arguments(add, '{"a": 1, "b": 2.5}') == {"a": 1.0, "b": 2.5}


@pytest.mark.parametrize("raw,message", [
    ('{"a": 1,', "Invalid JSON in arguments for tool 'add': Expecting property name"),
    ("[1, 2]", "Arguments for tool 'add' must be a JSON object, got array"),
    ('"a=1"', "Arguments for tool 'add' must be a JSON object, got string"),
    ("null", "Arguments for tool 'add' must be a JSON object, got null"),
    ('{"a": "one", "b": 2}', "Invalid arguments for tool 'add': a: Input should be a valid number"),
    ('{"a": 1}', "Invalid arguments for tool 'add': b: Field required"),
    ('{"a": 1, "b": 2, "c": 3}', "c: Extra inputs are not permitted"),
    ('{"a": 1, "b": 2, "context_variables": {}}', "context_variables: Extra inputs are not permitted"),
])
def test_validation_errors_are_written_for_the_model(raw: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_arguments(add, raw)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_field_error_is_listed_compactly() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_arguments(everything, '{"names": ["a", 2], "mode": "medium", "color": "green", '
                                       '"address": {"street": "s"}}')
    message = str(caught.value)
    assert message.startswith("Invalid arguments for tool 'everything': ")
    for part in ("names.1: Input should be a valid string", "counts: Field required",
                 "mode: Input should be 'fast' or 'slow'", "color: Input should be 'red' or 'blue'",
                 "address.zip_code: Field required"):
        assert part in message
    assert "https://" not in message  # no documentation links: noise for a model


def test_error_names_the_registered_tool() -> None:
    with pytest.raises(ToolArgumentsError, match="tool 'plus'"):
        validate_arguments(add, "{", tool_name="plus")


def test_forward_reference_that_cannot_be_resolved_is_any() -> None:
    def local(x: NotDefinedAnywhere, y: int) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Local."""

    _, schema = function_schema(local)
    assert schema["properties"] == {"x": {}, "y": {"type": "integer"}}


def test_any_accepts_anything() -> None:
    def anything(value: Any) -> None:
        """Anything."""

    assert validate_arguments(anything, '{"value": [1, {"a": null}]}') == {"value": [1, {"a": None}]}
