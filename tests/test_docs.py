"""The docs site builds with warnings as errors; every internal link of README.md and docs/*.md
resolves (files and #anchors); every page is in the nav; the README's test command is what CI
runs; the team graphs shown are what `durable-teams graph` prints. The code blocks themselves:
tests/test_doc_examples.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .doc_pages import PAGES, ROOT, anchors, blocks, commands, links

pytestmark = [pytest.mark.pure, pytest.mark.slow]

DOCS = ROOT / "docs"


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not re.search(r"^(WARNING|ERROR)\b", done.stderr, re.M), done.stderr
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")}
    assert {"index.html", "gateway/index.html", "troubleshooting/index.html"} <= built


def test_every_page_is_in_the_nav() -> None:
    # mkdocs.yml carries a !!python/name tag (the mermaid fence) that yaml.safe_load refuses
    nav = re.findall(r"^\s*- [^:\n]+: (\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.name for p in DOCS.glob("*.md"))


def test_every_internal_link_resolves() -> None:
    broken = []
    assert sum(len(links(page)) for page in PAGES) > 50
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_link_check_knows_headings() -> None:
    assert {"upgrading-workers", "encryption-at-rest",
            "several-workers-when-a-worker-process-dies"} <= anchors(DOCS / "deployment.md")
    assert "tokenless" not in anchors(DOCS / "gateway.md")


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run says it runs "the test command the README gives": the same line, exactly."""
    readme = (ROOT / "README.md").read_text()
    after = readme.split("Run the tests", 1)[1]
    block = next(b for b in blocks(ROOT / "README.md") if b.code.strip() in after.split("\n\n## ")[0])
    command = block.code.strip().split(" && ")[-1]
    assert command == "python -m pytest -q -n 3 --dist loadfile --cov"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in ci and "the test command the README gives" in (ROOT / ".ci" / "run").read_text()


def test_the_team_graphs_shown_are_what_the_cli_prints() -> None:
    shown = {}
    for page in PAGES:
        text = page.read_text()
        for block in blocks(page):
            if block.lang == "mermaid":
                before = "\n".join(text.splitlines()[:block.line - 1]).rstrip()
                team = re.search(r"\(`durable-teams graph ([\w-]+)`\):$", before)
                assert team, f"{block.where}: say which team it is: (`durable-teams graph NAME`):"
                shown[team.group(1)] = block.code
    assert set(shown) >= {"faang", "support"}
    for name, graph in shown.items():
        done = subprocess.run([sys.executable, "-m", "durable_teams", "graph", name], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == graph.strip(), name


def test_commands_are_read_from_shell_lines() -> None:
    """What the flag check sees (tests/test_doc_examples.py): placeholders, redirections,
    substitutions, pipes, comments and values that only look like our CLI."""
    code = ('id=$(durable-teams run support "x" --no-wait)   # --not-this\n'
            "durable-teams transcript <workflow-id> [--full] > out.txt\n"
            "X=1 durable-teams serve --host 0.0.0.0 && python -m bench.scale http --sizes 25\n"
            "temporal workflow start --task-queue durable-teams \\\n  --input '{}'\n"
            "opentelemetry-instrument durable-teams worker | tee log\n")
    assert [(c.program, c.words) for c in commands(code)] == [
        (("durable-teams", "run"), ("--no-wait",)),
        (("durable-teams", "transcript"), ("--full",)),
        (("durable-teams", "serve"), ("--host",)),
        (("python", "-m", "bench.scale"), ("http", "--sizes")),
        (("durable-teams", "worker"), ()),
    ]


def test_the_quick_start_names_the_python_the_package_requires() -> None:
    """The README's front door says which Python to have; pyproject refuses any older one."""
    root = Path(__file__).resolve().parent.parent
    needed = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]["requires-python"]
    stated = re.search(r"## Quick start \(a fresh machine with Python (3\.\d+)\+\)",
                       (root / "README.md").read_text("utf-8"))
    assert stated is not None and needed == f">={stated.group(1)}"


def test_the_readme_leads_to_every_page() -> None:
    """A newcomer finds every page of the manual from the README's documentation list."""
    readme = (ROOT / "README.md").read_text("utf-8")
    listed = set(re.findall(r"\]\(docs/([\w.-]+\.md)", readme))
    pages = {page.name for page in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert sorted(pages - listed) == []


def test_the_quick_start_is_the_same_command_everywhere() -> None:
    """The docs' home page gives the README's first command, which installs no extra."""
    first = next(line for line in (ROOT / "README.md").read_text("utf-8").splitlines()
                 if line.startswith("python3 -m venv .venv"))
    assert "pip install -e . " in first and first.endswith("durable-teams demo")
    assert first in (ROOT / "docs" / "index.md").read_text("utf-8")
