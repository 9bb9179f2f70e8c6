"""Docs that cannot rot: every ```python and shell block of README.md and docs/*.md either runs
here or carries `<!-- not-run: reason -->` on the line right before its fence. Unmarked blocks
run (Python in a subprocess of this interpreter, shell with bash, the repository as the working
directory); marked Python blocks must still compile; every shell block passes `bash -n`, and
every durable-teams, `python -m <module of this repository>` and `python worker.py` command in
one exists, with each long flag it uses in its --help."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .doc_pages import CHECKED, PAGES, ROOT, SHELL, Block, all_blocks, blocks, commands

pytestmark = [pytest.mark.pure, pytest.mark.slow]

BLOCKS = all_blocks()
PYTHON_RUN = [b for b in BLOCKS if b.lang == "python" and b.not_run is None]
PYTHON_MARKED = [b for b in BLOCKS if b.lang == "python" and b.not_run is not None]
SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELL]
SHELL_RUN = [b for b in SHELL_BLOCKS if b.not_run is None]
TIMEOUT = 60


def env() -> dict[str, str]:
    """No model endpoint and no Temporal address from the caller's environment: a block that
    runs must need neither. `durable-teams` and `python` are this checkout's."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TEMPORAL_ADDRESS")}
    clean["PYTHONPATH"] = str(ROOT)
    clean["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{clean.get('PATH', '')}"
    return clean


def ids(found: list[Block]) -> list[str]:
    return [b.where for b in found]


def test_the_pages_have_blocks_of_each_kind() -> None:
    assert PYTHON_RUN and PYTHON_MARKED and SHELL_RUN and len(SHELL_BLOCKS) > len(SHELL_RUN)


def test_a_block_that_is_not_run_says_why() -> None:
    unexplained = [b.where for b in BLOCKS if b.not_run is not None and len(b.not_run.split()) < 2]
    assert unexplained == [], "a not-run mark needs a reason: <!-- not-run: needs ... -->"


def test_every_not_run_mark_is_right_before_a_checked_fence() -> None:
    """A mark anywhere else (a blank line between, a text block) would exempt nothing."""
    stray = []
    for page in PAGES:
        lines = page.read_text("utf-8").splitlines()
        fences = {b.line: b.lang for b in blocks(page)}
        stray += [f"{page.name}:{n}" for n, line in enumerate(lines, 1)
                  if line.lstrip().startswith("<!--") and "not-run" in line
                  and fences.get(n + 1) not in CHECKED]
    assert stray == []


@pytest.mark.parametrize("block", PYTHON_RUN, ids=ids(PYTHON_RUN))
def test_python_block_runs(block: Block) -> None:
    done = subprocess.run([sys.executable, "-c", block.code], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("block", PYTHON_MARKED, ids=ids(PYTHON_MARKED))
def test_python_block_not_run_still_compiles(block: Block) -> None:
    compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=ids(SHELL_BLOCKS))
def test_shell_block_parses(block: Block) -> None:
    done = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, f"{block.where}: {done.stderr}"


@pytest.mark.parametrize("block", SHELL_RUN, ids=ids(SHELL_RUN))
def test_shell_block_runs(block: Block) -> None:
    script = 'durable-teams() { python -m durable_teams "$@"; }\nset -euo pipefail\n' + block.code
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env(), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}{done.stderr}"


# Each program's --help, all in one interpreter (a fresh one per program costs a second each):
# durable-teams through its entry point, modules and scripts as `python -m` / `python x.py` run them.
HELP_SCRIPT = """
import contextlib, io, json, runpy, sys
from durable_teams.cli.main import main
out = {}
for program in json.load(sys.stdin):
    text, code = io.StringIO(), 0
    sys.argv = [program[-1], "--help"]
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        try:
            if program[0] == "durable-teams":
                main([*program[1:], "--help"])
            elif program[1] == "-m":
                runpy.run_module(program[2], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(program[1], run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except Exception as error:
            code, _ = 1, text.write(repr(error))
    out[" ".join(program)] = [code, text.getvalue()]
print(json.dumps(out))
"""


def help_texts(programs: list[tuple[str, ...]]) -> dict[tuple[str, ...], tuple[int, str]]:
    done = subprocess.run([sys.executable, "-c", HELP_SCRIPT], input=json.dumps(programs),
                          cwd=ROOT, env=env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    return {program: tuple(found[" ".join(program)]) for program in programs}  # type: ignore[misc]


def test_every_command_in_a_shell_block_exists_with_its_flags() -> None:
    used: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for block in SHELL_BLOCKS:
        for command in commands(block.code):
            words = used.setdefault(command.program, {})
            for word in command.words:
                words.setdefault(word, set()).add(block.where)
    assert ("durable-teams", "graph") in used and ("python", "-m", "bench.scale") in used
    helps = help_texts(list(used))
    problems = []
    for program, words in used.items():
        code, text = helps[program]
        if code != 0:
            problems.append(f"{' '.join(program)} --help: exit {code}: {text[-300:]}")
            continue
        problems += [f"{' '.join(program)}: {word} is not in its --help (used at {sorted(where)})"
                     for word, where in words.items()
                     if not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)]
    assert problems == []
