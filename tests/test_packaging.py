"""What `pip install` puts into site-packages: one package, `durable_teams`, and no generic
top-level names (`workflows`, `activities`, `worker`) that would collide with an application's
own modules. And users import everything from that one namespace."""

from __future__ import annotations

import asyncio
import os
import shutil
import site
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from temporalio.client import Client

import durable_teams

from .clones import tracked_copy

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

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


def test_what_a_team_author_and_a_client_need_imports_from_durable_teams() -> None:
    assert set(durable_teams.__all__) == {
        "Agent", "Supervisor", "Swarm", "handoff", "tool", "Result", "Budgets",
        "connect", "start_conversation", "send_turn", "build_worker", "get_stream_writer"}


def test_importing_the_package_loads_no_workflow_activity_or_temporal_code() -> None:
    probe = ("import sys, durable_teams; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('temporalio', 'openai', 'workflows', 'activities') or m.startswith('durable_teams.')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


DOCUMENTED = ("durable_teams", "durable_teams.teams", "durable_teams.client", "durable_teams.worker",
              "durable_teams.encryption", "durable_teams.workflows", "durable_teams.workflows.intents",
              "durable_teams.examples", "durable_teams.memory",
              "durable_teams.replay")
"""Where the docs may import from: the package and its documented submodules (each with a public
table, docs/architecture.md; the workflow and its wire types from `durable_teams.workflows`)."""
DEMONSTRATED = ("durable_teams.activities.model_toolless",)
"""Internal modules a page imports to show a rule at work (docs/models.md: which refusals mean
"no tools"), named one by one so the list cannot grow unseen."""


def test_the_docs_examples_import_only_the_documented_modules() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        imports = [line.strip() for line in page.read_text().splitlines()
                   if line.strip().startswith(("from ", "import ")) and "durable_teams" in line
                   or line.strip().startswith(("from workflows", "from activities"))]
        if page.name == "README.md":
            assert imports, "the README shows imports"
        for line in imports:
            module = line.split()[1]
            assert line.startswith("from ") and (module in DOCUMENTED + DEMONSTRATED or module.startswith(
                "durable_teams.examples.")), f"{page.name}: {line}"


async def test_an_sdist_from_a_fresh_clone_installs_and_runs_the_demo(tmp_path: Path, client: Client) -> None:
    """The source distribution carries everything a build needs, installs into an empty environment and runs the demo there, away from
    the checkout, so nothing can come from the root folders."""
    source = tracked_copy(tmp_path / "clone")
    build = ("import sys; from setuptools import build_meta; "
             "print(build_meta.build_sdist(sys.argv[1]))")
    await asyncio.to_thread(subprocess.run, [sys.executable, "-c", build, str(tmp_path / "dist")],
                            cwd=source, check=True, capture_output=True)
    (sdist,) = (tmp_path / "dist").glob("durable_teams-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[-1]: m for m in archive.getmembers()}
    assert members["durable_teams/workflows/conversation.py"].isfile()
    assert members["durable_teams/activities/model.py"].isfile()

    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    await asyncio.to_thread(subprocess.run, [
        str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
        "--no-build-isolation", str(sdist)], check=True, capture_output=True, env={
            **os.environ, "PYTHONPATH": ":".join(site.getsitepackages())})  # setuptools to build
    paths = await asyncio.to_thread(subprocess.run, [
        str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True)
    purelib = paths.stdout.strip()
    # the dependencies from this environment, after the fresh one's own site-packages
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHON"))}
    env["TEMPORAL_ADDRESS"] = client.service_client.config.target_host
    where = await asyncio.to_thread(subprocess.run, [
        str(python), "-c", "import durable_teams, durable_teams.workflows.conversation as c; "
        "print(durable_teams.__file__); print(c.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert all(line.startswith(purelib) for line in where.stdout.split()), where.stdout
    demo = await asyncio.to_thread(subprocess.run, [str(python), "-m", "durable_teams", "demo"],
                                   cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "1,977,586" in demo.stdout
