"""A module's imports are declared where that module is installed (pyproject.toml): the base
dependencies for what `pip install durable-teams` must run (the worker, the CLI, the demo), an
extra for the rest, and never a package that only happens to come with another one (openai 3.57
moved from httpx to httpx2, and the README's first command failed on a bare install). A command
whose extra is missing says which to install, in one line. `.ci/bare-installs` proves the same
in real virtual environments: the README's first command, then each extra alone."""

from __future__ import annotations

import ast
import base64
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

from durable_teams.cli.extras import COMMAND_EXTRA, IMPORTS_OF_EXTRA, extra_of, missing_extra

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "durable_teams"
NOT_FOR_USERS = {"test", "bench", "docs"}
"""Extras for the project's own work: no module of the package may rely on them."""


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return normalized(match.group(0))


@cache
def declared() -> dict[str, set[str]]:
    """"" (the base) and each extra -> the distributions it declares directly."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    found = {"": {requirement_name(r) for r in project["dependencies"]}}
    for extra, requirements in project["optional-dependencies"].items():
        found[extra] = {requirement_name(r) for r in requirements}
    return found


@cache
def top_level_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


@cache
def distribution_of(module: str) -> str:
    """The installed distribution that provides `module` (for a namespace package shared by
    several, such as `google`, the one holding its second part: `google.protobuf`)."""
    top, _, rest = module.partition(".")
    candidates = {normalized(d) for d in top_level_distributions().get(top, ())}
    if len(candidates) > 1 and rest:
        inner = Path(top, rest.partition(".")[0])
        candidates = {name for name in candidates
                      if any(Path(*f.parts[:2]).with_suffix("") == inner
                             for f in importlib.metadata.distribution(name).files or ())}
    assert len(candidates) == 1, f"no single installed distribution provides {module!r}: {candidates}"
    return candidates.pop()


@cache  # every module parsed once per process (read only by the tests below)
def third_party_imports() -> dict[str, set[str]]:
    """Every import of the package that is neither the standard library nor ours (lazy ones
    too) -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from opentelemetry import trace`: the name tells which distribution of a
                # namespace package it is
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "durable_teams":
                    found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.slow  # reads the installed distributions' file lists: 1-3 s
def test_every_import_is_declared_where_its_module_is_installed() -> None:
    """An import of an extra's (IMPORTS_OF_EXTRA) is declared by that extra; every other one
    by the base dependencies, directly."""
    wrong = []
    for module, files in sorted(third_party_imports().items()):
        dist = distribution_of(module)
        extra = extra_of(module)
        if dist not in declared()[extra or ""]:
            where = f"the '{extra}' extra" if extra else "the base dependencies"
            wrong.append(f"{module} ({dist}), imported by {sorted(files)[0]}: not in {where}")
    assert wrong == []


@pytest.mark.slow  # parses every module of the package and reads the distributions: 1-4 s under load
def test_each_extra_declares_every_import_the_table_gives_it() -> None:
    imported_tops = {module.partition(".")[0]: module for module in third_party_imports()}
    for extra, tops in IMPORTS_OF_EXTRA.items():
        assert extra in declared() and extra not in NOT_FOR_USERS, extra
        for top in tops:
            assert top in imported_tops, f"{top}: listed for '{extra}' but imported nowhere"
            assert distribution_of(imported_tops[top]) in declared()[extra], (extra, top)
    assert set(COMMAND_EXTRA.values()) <= set(IMPORTS_OF_EXTRA)


@pytest.mark.slow  # a Python process of its own
def test_the_bare_install_runs_the_worker_and_the_cli() -> None:
    """The base dependencies are enough for what the README's first command runs: the CLI, the
    demo's worker and every activity it registers, and the Python client."""
    code = ("import sys\n"
            f"for top in {sorted(set().union(*IMPORTS_OF_EXTRA.values()))!r}:\n"
            "    sys.modules[top] = None  # as if no extra were installed\n"
            "import durable_teams.cli.main, durable_teams.cli.command_line, durable_teams.cli.demo\n"
            "import durable_teams.worker.build\n"
            "import durable_teams.worker.run, durable_teams.client.send, durable_teams.examples.faang\n"
            "from durable_teams.worker.build import build_worker\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


@pytest.mark.slow  # a CLI process each
@pytest.mark.parametrize(("argv", "blocked", "extra"), [
    (["serve"], "starlette", "gateway"),
    (["serve"], "uvicorn", "gateway"),
    (["mcp"], "mcp", "mcp"),
    (["mcp"], "starlette", "mcp"),
    (["codec-server"], "cryptography", "crypto"),
])
def test_a_command_whose_extra_is_missing_says_which_in_one_line(
        argv: list[str], blocked: str, extra: str) -> None:
    code = (f"import sys\nsys.modules[{blocked!r}] = None\n"
            f"from durable_teams.cli.main import main\nmain({argv!r})\n")
    key = base64.b64encode(bytes(32)).decode()  # the codec server reads its key first
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "TEMPORAL_ADDRESS": "127.0.0.1:1",
                               "DURABLE_TEAMS_ENCRYPTION_KEY": key})
    assert done.returncode in (1, 2), done.stderr
    (line,) = done.stderr.splitlines()  # no traceback
    assert line.startswith(f"durable-teams{':' if argv[0] != 'codec-server' else ''} ")
    assert line.endswith(f"pip install 'durable-teams[{extra}]'")


def test_an_error_raised_from_a_missing_extra_names_it() -> None:
    try:
        try:
            import_blocked = ModuleNotFoundError("No module named 'redis'", name="redis")
            raise import_blocked
        except ModuleNotFoundError as missing:
            raise ImportError("live tokens need redis") from missing
    except ImportError as err:
        assert missing_extra(err) == ("this feature needs the optional 'live' extra (no module "
                                      "named 'redis'): pip install 'durable-teams[live]'")
    assert missing_extra(ModuleNotFoundError("No module named 'numpy'", name="numpy")) is None
    assert missing_extra(ValueError("no")) is None
