"""Workflow code stays deterministic: checked in the source, because the worker passes the
`durable_teams.workflows` package through Temporal's sandbox (see durable_teams/worker/build.py), so the sandbox no
longer stops a wall-clock read or I/O there at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

WORKFLOWS = sorted((Path(__file__).resolve().parent.parent / "workflows").glob("*.py"))

ALLOWED_MODULES = {
    "__future__", "asyncio", "collections", "dataclasses", "datetime", "json", "re", "typing",
    "weakref", "zoneinfo", "difflib", "pydantic", "temporalio", "math", "contextlib", "contextvars",
    "hashlib", "ipaddress", "urllib.parse",
}
"""Everything else (random, uuid, time, os, socket, threading, openai, httpx, ...) is refused,
but the package itself: its modules by their absolute names (the public face in `__init__.py`)
and the root's `_lazy_exports` (importlib only: tests/test_packaging.py)."""


def our_own(module: str) -> bool:
    return module == "durable_teams" or module.startswith("durable_teams.workflows")

FORBIDDEN_CALLS = {
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
    ("asyncio", "get_event_loop"), ("asyncio", "to_thread"),
}
FORBIDDEN_NAMES = {"open", "print", "input", "exec", "eval"}


def imported_modules(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = [f"imports {m}" for m in imported_modules(tree)
           if m.split(".")[0] not in ALLOWED_MODULES and m not in ALLOWED_MODULES and not our_own(m)]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_NAMES:
            out.append(f"line {node.lineno}: calls {func.id}()")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
            (func.value.id, func.attr) in FORBIDDEN_CALLS
        ):
            out.append(f"line {node.lineno}: calls {func.value.id}.{func.attr}() (use workflow.now())")
    return out


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_module_has_no_wall_clock_randomness_or_io(path: Path) -> None:
    assert problems(path) == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import uuid\nfrom datetime import datetime\nx = datetime.now()\nopen('f')\n")
    assert problems(bad) == ["imports uuid", "line 3: calls datetime.now() (use workflow.now())",
                             "line 4: calls open()"]
