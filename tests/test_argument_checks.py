"""A breakpoint's edited arguments checked against the tool's schema in the workflow: the
same verdict as the tool's own validation on the worker (teams/tool_schema.py), naming the
field. Pure."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from durable_teams.teams.tool_schema import ToolArgumentsError, validate_arguments
from durable_teams.teams.tools import tool
from durable_teams.workflows.argument_checks import arguments_problem

pytestmark = pytest.mark.pure


class Address(BaseModel):
    city: str
    zip: str | None = None


def pay(amount: int, to: Address, note: str | None = None, kind: Literal["card", "bank"] = "card",
        tags: list[str] = [], share: float = Field(default=1.0, ge=0, le=1),  # noqa: B006
        context_variables: dict | None = None) -> str:
    """Pay someone."""
    return "paid"


PAY = tool(pay)
GOOD = [
    {"amount": 5, "to": {"city": "Oslo"}},
    {"amount": "5", "to": {"city": "Oslo", "zip": None}, "note": None},  # lax: "5" is an int
    {"amount": 5.0, "to": {"city": "Oslo"}, "kind": "bank", "tags": ["a"], "share": 0.5},
]
BAD = [
    ({"amount": "lots", "to": {"city": "Oslo"}}, "'amount': integer expected, not \"lots\""),
    ({"to": {"city": "Oslo"}}, "'amount': required, and missing"),
    ({"amount": 5, "to": {}}, "'to.city': required, and missing"),
    ({"amount": 5, "to": {"city": 3}}, "'to.city': string expected, not 3"),
    ({"amount": 5, "to": {"city": "Oslo"}, "kind": "cash"}, "'kind': one of [\"card\", \"bank\"] expected"),
    ({"amount": 5, "to": {"city": "Oslo"}, "tags": [1]}, "'tags[0]': string expected, not 1"),
    ({"amount": 5, "to": {"city": "Oslo"}, "share": 2}, "'share': 2 is outside the maximum 1"),
    ({"amount": 5, "to": {"city": "Oslo"}, "context_variables": {}},
     "'context_variables' is not a parameter of the tool"),
    ({"amount": 5, "to": {"city": "Oslo"}, "extra": 1}, "'extra' is not a parameter of the tool"),
]


@pytest.mark.parametrize("arguments", GOOD)
def test_arguments_the_tool_takes_pass(arguments: dict[str, Any]) -> None:
    assert arguments_problem(PAY.spec.parameters, arguments) is None
    validate_arguments(pay, json.dumps(arguments))  # the tool's own validation agrees


@pytest.mark.parametrize(("arguments", "why"), BAD)
def test_arguments_the_tool_refuses_are_refused_naming_the_field(arguments: dict[str, Any], why: str) -> None:
    problem = arguments_problem(PAY.spec.parameters, arguments)
    assert problem is not None and problem.startswith(why), problem
    with pytest.raises(ToolArgumentsError):  # the tool's own validation agrees
        validate_arguments(pay, json.dumps(arguments))
