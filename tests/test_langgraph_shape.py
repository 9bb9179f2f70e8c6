"""The LangGraph door's code stays in the repository's shape: each module under 300 lines,
each function under 50 (the developers' guide), so a route table or a handler that grows is
split by what it does. Pure: reads the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

DOOR = Path(__file__).parent.parent / "durable_teams" / "gateway" / "doors" / "langgraph"


def test_the_doors_modules_and_functions_are_within_the_guides_sizes() -> None:
    too_long = []
    for module in sorted(DOOR.glob("*.py")):
        source = module.read_text()
        if len(source.splitlines()) > 300:
            too_long.append(f"{module.name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                lines = node.end_lineno - node.lineno + 1
                if lines > 50:
                    too_long.append(f"{module.name}: {node.name} is {lines} lines")
    assert too_long == []
