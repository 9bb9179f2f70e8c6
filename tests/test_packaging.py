"""What `pip install` puts into site-packages: one package, `durable_teams`, and no generic
top-level names (`workflows`, `activities`, `worker`) that would collide with an application's
own modules. And users import everything from that one namespace."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import durable_teams

ROOT = Path(__file__).resolve().parent.parent


def test_a_fresh_environment_with_the_wheel_has_only_the_durable_teams_package(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: building writes build/ and egg-info beside the sources
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".*_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(source)], check=True)
    (wheel,) = (tmp_path / "dist").glob("durable_teams-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"durable_teams"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "durable_teams/workflows/conversation.py" in names
    assert "durable_teams/activities/model.py" in names

    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    installed = {p.name for p in Path(site).iterdir()}
    assert "durable_teams" in installed
    assert not {"workflows", "activities", "worker.py"} & installed


def test_every_public_name_imports_from_durable_teams() -> None:
    for name in durable_teams.__all__:
        assert getattr(durable_teams, name) is not None, name
    assert set(durable_teams.__all__) >= {
        "Agent", "Supervisor", "Swarm", "handoff", "tool", "Result", "RoutingRule", "Budgets",
        "TeamWorkflow", "ConversationInput", "UserTurn", "send_turn", "connect", "build_worker"}


def test_importing_the_package_loads_no_workflow_activity_or_temporal_code() -> None:
    probe = ("import sys, durable_teams; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('temporalio', 'openai', 'workflows', 'activities') or m.startswith('durable_teams.')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_readme_examples_import_only_from_durable_teams() -> None:
    readme = (ROOT / "README.md").read_text()
    imports = [line.strip() for line in readme.splitlines()
               if line.strip().startswith(("from ", "import ")) and "durable_teams" in line
               or line.strip().startswith(("from workflows", "from activities"))]
    assert imports, "the README shows imports"
    for line in imports:
        assert line.startswith("from durable_teams import") or line.startswith("from durable_teams.examples"), line


def test_no_module_imports_the_root_folders_by_their_root_names() -> None:
    """`import workflows.messages` would load a second copy of every class beside
    `durable_teams.workflows.messages`: one import path per file. ruff bans it outside the
    linked folders (pyproject.toml); inside them, where ruff cannot tell, this test does."""
    offenders = []
    for path in [*ROOT.glob("workflows/*.py"), *ROOT.glob("activities/*.py")]:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                     else [])
            offenders += [f"{path.name}: {n}" for n in names
                          if n.split(".")[0] in {"workflows", "activities", "worker"}]
    assert offenders == []
