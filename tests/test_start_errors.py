"""A worker or CLI command that cannot start says why in one line and exits non-zero, never a
traceback: a bad setting (read when used, not when a module is imported), a port out of range,
a `--team` module that does not import (a syntax error, an exception at import)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from durable_teams.cli.command_line import parser
from durable_teams.cli.serve import parser as serve_parser
from durable_teams.worker.run import TeamLoadError, load_teams
from durable_teams.worker.settings import GRACEFUL_ENV, graceful_timeout

pytestmark = [pytest.mark.pure, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
CLOSED = "127.0.0.1:1"
"""Nothing listens there: a worker that got as far as connecting would say so instead."""


def run(command: list[str], cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env={**os.environ, "TEMPORAL_ADDRESS": CLOSED, **env},
                          capture_output=True, text=True, timeout=60)


def one_line(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (code, 1), done.stderr
    return lines[0]


@pytest.mark.parametrize("bad", ["abc", "-5", "nan", "inf", "1e300"])
def test_a_bad_graceful_shutdown_setting_is_one_line_naming_it(bad: str) -> None:
    done = run([sys.executable, "worker.py"], **{GRACEFUL_ENV: bad})
    assert one_line(done) == (f"durable-teams worker: {GRACEFUL_ENV} must be a number of seconds "
                              f"from 0 to 86,400, not '{bad}'")
    assert done.stdout == ""


def test_the_graceful_shutdown_setting_is_read_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # importing the worker's module with a bad value is no error (it was, for every command)
    imported = run([sys.executable, "-c", "import durable_teams.worker.run"], **{GRACEFUL_ENV: "abc"})
    assert (imported.returncode, imported.stderr) == (0, "")
    monkeypatch.delenv(GRACEFUL_ENV, raising=False)
    assert graceful_timeout() == timedelta(seconds=20)
    for value, seconds in (("0", 0.0), (" 7.5 ", 7.5), ("", 20.0)):
        monkeypatch.setenv(GRACEFUL_ENV, value)
        assert graceful_timeout() == timedelta(seconds=seconds)
    monkeypatch.setenv(GRACEFUL_ENV, "-1")
    with pytest.raises(SystemExit, match=f"{GRACEFUL_ENV} must be a number of seconds from 0 to 86,400, not '-1'"):
        graceful_timeout()


def test_a_bad_embedded_port_is_one_line_from_the_worker(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    done = subprocess.run([sys.executable, "worker.py"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**env, "DURABLE_TEAMS_PORT": "abc", "DURABLE_TEAMS_DB": str(tmp_path / "db")})
    assert one_line(done) == "durable-teams worker: DURABLE_TEAMS_PORT='abc' is not a port number (1-65535)"
    # a reading command with no server configured looks for the embedded one there: the same line
    status = subprocess.run([sys.executable, "-m", "durable_teams", "status", "x"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env={**env, "DURABLE_TEAMS_PORT": "abc"})
    assert one_line(status) == "durable-teams: DURABLE_TEAMS_PORT='abc' is not a port number (1-65535)"


def test_the_codec_server_refuses_a_port_out_of_range() -> None:
    done = run([sys.executable, "-m", "durable_teams", "codec-server", "--port", "99999"])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().endswith("error: argument --port: '99999' is not a port number (1-65535)")


@pytest.mark.parametrize("argv", [
    ["server-start", "--port", "99999"], ["server-start", "--port", "0"], ["demo", "--ui-port", "65536"],
    ["worker", "--port", "-1"], ["server-stop", "--port", "abc"], ["server-start", "--codec-server", "70000"]])
def test_a_port_out_of_range_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parser().parse_args(argv)
    assert stop.value.code == 2
    assert f"'{argv[-1]}' is not a port number (1-65535)" in capsys.readouterr().err


def test_serve_refuses_a_port_out_of_range_before_it_starts(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("99999", "0", "http"):
        with pytest.raises(SystemExit) as stop:
            serve_parser().parse_args(["--port", bad])
        assert stop.value.code == 2
        assert f"argument --port: '{bad}' is not a port number (1-65535)" in capsys.readouterr().err
    assert serve_parser().parse_args(["--port", "65535"]).port == 65535
    done = run([sys.executable, "-m", "durable_teams", "serve", "--port", "99999"])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().endswith("error: argument --port: '99999' is not a port number (1-65535)")


MODULES = {
    "syntax_teams": "x = 1\ny = (\ndef f(:\n",
    "raising_teams": "import os\n\nTEAMS = 1 / 0\n",
    "library_raises": 'import json\nTEAMS = json.loads("{bad")\n',
    "missing_dep": "import not_installed_anywhere\n",
    "bad_team": textwrap.dedent('''\
        from durable_teams import Agent, Swarm
        TEAMS = Swarm([Agent("a", "x"), Agent("a", "y")])
        '''),
}
EXPECTED = {
    "syntax_teams": "syntax_teams.py line 3: SyntaxError: invalid syntax",
    "raising_teams": "raising_teams.py line 3: ZeroDivisionError: division by zero",
    "library_raises": "library_raises.py line 2: JSONDecodeError: Expecting property name enclosed in double "
                      "quotes: line 1 column 2 (char 1)",
    "missing_dep": "missing_dep.py line 1: ModuleNotFoundError: No module named 'not_installed_anywhere'",
    "bad_team": "bad_team.py line 2: TeamError: swarm 'swarm' has two agents named 'a'",
}


@pytest.fixture
def team_modules(tmp_path: Path) -> Path:
    for name, source in MODULES.items():
        (tmp_path / f"{name}.py").write_text(source)
    return tmp_path


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_team_module_that_fails_to_import_is_one_line_naming_file_and_line(
        name: str, team_modules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(team_modules))
    monkeypatch.chdir(team_modules)
    with pytest.raises(TeamLoadError) as failed:
        load_teams([f"{name}:TEAMS"])
    assert str(failed.value) == f"cannot load teams from '{name}:TEAMS': {EXPECTED[name]}"
    sys.modules.pop(name, None)


@pytest.mark.parametrize("command", [[sys.executable, str(ROOT / "worker.py")],
                                     [sys.executable, "-m", "durable_teams", "worker"]])
def test_the_worker_says_which_team_module_failed_and_where(command: list[str], team_modules: Path) -> None:
    for name in ("syntax_teams", "raising_teams"):
        done = run([*command, "--team", name], cwd=team_modules, PYTHONPATH=f"{team_modules}{os.pathsep}{ROOT}")
        assert one_line(done) == f"durable-teams worker: cannot load teams from {name!r}: {EXPECTED[name]}"


def test_two_teams_of_one_name_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--examples --team mine` where mine defines `acme` too: one definition would win silently,
    and workers serving different definitions under one name would not see the difference."""
    (tmp_path / "mine.py").write_text(textwrap.dedent("""
        from durable_teams import Agent, Swarm
        TEAMS = [Swarm([Agent("a", "Answers.")], name="acme")]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TeamLoadError) as refused:
        load_teams(["mine"], examples=True)
    assert str(refused.value) == ("cannot load teams from 'mine': a team named 'acme' is already served (an "
                                  "example team, or another --team): rename one")
