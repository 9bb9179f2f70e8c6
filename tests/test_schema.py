"""Tool schemas from Python signatures, and argument validation (pure, no Temporal)."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import pytest
from pydantic import BaseModel

from activities.schema import ToolArgumentsError, function_schema, validate_arguments
from activities.tools import tool
from durable_teams.examples.faang import add


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

    Args:
        names: Who to greet.
        limit: At most this many.
    """
    return ""


def test_seed_add_schema_is_what_the_model_needs() -> None:
    description, schema = function_schema(add)
    assert description == "Add two numbers."
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }


def test_rich_signature_schema() -> None:
    description, schema = function_schema(everything)
    assert description == "Do everything."
    props = schema["properties"]
    assert set(props) == {"names", "counts", "mode", "color", "address", "note", "limit"}
    assert props["names"]["type"] == "array" and props["names"]["items"] == {"type": "string"}
    assert props["names"]["description"] == "Who to greet."
    assert props["counts"]["additionalProperties"] == {"type": "integer"}
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert set(schema["$defs"]["Address"]["required"]) == {"street", "zip_code"}
    assert props["limit"]["default"] == 10 and props["limit"]["description"] == "At most this many."
    assert {"type": "null"} in props["note"]["anyOf"]
    assert schema["required"] == ["names", "counts", "mode", "color", "address"]


def test_validation_converts_types() -> None:
    kwargs = validate_arguments(everything, '{"names": ["a"], "counts": {"x": "2"}, "mode": "fast", '
                                           '"color": "blue", "address": {"street": "s", "zip_code": "1"}}')
    assert kwargs["color"] is Color.BLUE
    assert isinstance(kwargs["address"], Address)
    assert kwargs["counts"] == {"x": 2}
    assert kwargs["limit"] == 10


@pytest.mark.parametrize("raw,message", [
    ('{"a": 1,', "Invalid JSON in arguments for tool 'add'"),
    ("[1, 2]", "Arguments for tool 'add' must be a JSON object, got list"),
    ('{"a": "one", "b": 2}', "Invalid arguments for tool 'add': a: Input should be a valid number"),
    ('{"a": 1}', "b: Field required"),
    ('{"a": 1, "b": 2, "c": 3}', "c: Extra inputs are not permitted"),
])
def test_validation_errors_are_written_for_the_model(raw: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_arguments(add, raw)
    assert message in str(caught.value)


def test_tool_options_and_injected_parameters() -> None:
    t = tool(everything, local=True, needs_approval=True)
    assert t.spec.local and t.spec.needs_approval
    assert t.spec.context_params == ["context_variables"]
    assert "idempotency_key" not in t.spec.parameters["properties"]
