"""The test suite's shape, as a reader and `pytest -m` see it: every test module says at its top
what it needs (`pytestmark`: `pure` or `workflow`, and `slow` when it starts processes or a
browser), and shares teams, models and helpers through helper modules, never by importing
another test module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

TESTS = Path(__file__).resolve().parent
MODULES = sorted(TESTS.glob("test_*.py"))

STARTS_A_PROCESS = re.compile(
    r"\bsubprocess\.|create_subprocess_exec|\brun_cli\(|(?<![\w.])cli\(|chromium_or_skip\(|async_playwright"
    r"|worker_process|\bspawn_worker\(|redis_server|\bDevServer\(|\bPopen\(|\bprocs\.(worker|model_server|dev_server)\(")
"""What starts a process or a browser in a test (the CLI, a worker, a server, Chromium)."""
NEEDS_TEMPORAL = re.compile(r"WorkflowEnvironment\.start|\bDevServer\(")
"""What starts a Temporal server of the test's own."""
TEMPORAL_FIXTURES = {"client", "env"}


def declared_marks(decorators: list[ast.expr]) -> set[str]:
    """The `pytest.mark.X` names among `decorators` (or a `pytestmark` value's elements)."""
    return {node.attr for d in decorators for node in ast.walk(d)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"}


def module_marks(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in node.targets):
            return declared_marks([node.value])
    return None


def functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_each_module_declares_what_it_needs(path: Path) -> None:
    source = path.read_text()
    tree = ast.parse(source)
    marks = module_marks(tree)
    assert marks is not None, f"{path.name}: no `pytestmark = pytest.mark.pure` (or workflow) at its top"
    assert len(marks & {"pure", "workflow"}) == 1, f"{path.name}: pytestmark needs one of pure, workflow: {marks}"
    uses_temporal = bool(NEEDS_TEMPORAL.search(source)) or any(
        TEMPORAL_FIXTURES & {a.arg for a in f.args.args} for f in functions(tree))
    if uses_temporal:
        assert "workflow" in marks, f"{path.name} runs a Temporal server: mark it workflow, not pure"
    if "slow" in marks:
        return
    for f in functions(tree):  # a module not slow as a whole marks each test that starts a process
        body = ast.get_source_segment(source, f) or ""
        if STARTS_A_PROCESS.search(body):
            assert f.name.startswith("test_") and "slow" in declared_marks(f.decorator_list), (
                f"{path.name}: {f.name} starts a process or a browser: mark the module (or this test) slow")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_no_module_imports_another_test_module(path: Path) -> None:
    """Shared teams, models and waits live in helper modules (`teams.py`, `waiting.py`, ...):
    importing a test module runs its collection-time code and hides what is shared."""
    tree = ast.parse(path.read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level and not n.module
                 for a in n.names}
    imported |= {a.name.rsplit(".", 1)[-1] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names if a.name.startswith("tests.")}
    assert not {m for m in imported if m.startswith("test_")}, f"{path.name} imports a test module: {imported}"


def test_the_rule_sees_a_module_without_a_marker(tmp_path: Path) -> None:
    """The checks above read source, so a module they cannot parse or one that hides its marker
    in a fixture-name rule would slip through: this pins the reading itself."""
    tree = ast.parse("import pytest\npytestmark = [pytest.mark.workflow, pytest.mark.slow]\n")
    assert module_marks(tree) == {"workflow", "slow"}
    assert module_marks(ast.parse("import pytest\n")) is None
    assert STARTS_A_PROCESS.search("await run_{}('x')".format("cli")) and not STARTS_A_PROCESS.search("await client.x()")
