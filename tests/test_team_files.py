"""`--team myteams:TEAMS` finds a team file in the working directory (as uvicorn and celery do),
or at a path (`path/to/myteams.py:TEAMS`); a module that is not there says where it looked."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from durable_teams.worker.run import TeamLoadError, load_teams
from durable_teams.worker.team_modules import split_spec

pytestmark = pytest.mark.pure

TEAM_FILE = textwrap.dedent("""
    from durable_teams import Agent, Supervisor
    from helper_tools import shout

    TEAMS = [Supervisor([Agent("echo", "Echo.", tools=[shout])], name="{name}")]
""")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a team file that imports a neighbour, and a Python path without the
    working directory on it (a console script's)."""
    (tmp_path / "helper_tools.py").write_text('def shout(text: str) -> str:\n    """Shout."""\n    return text.upper()\n')
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd(), str(tmp_path))])
    for name in ("myteams_cwd", "myteams_path", "helper_tools"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_a_team_file_in_the_working_directory_loads(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "myteams_cwd.py").write_text(TEAM_FILE.format(name="cwd-team"))
    monkeypatch.chdir(folder)
    assert [t.spec.name for t in load_teams(["myteams_cwd:TEAMS"])] == ["cwd-team"]
    assert [t.spec.name for t in load_teams(["myteams_cwd"])] == ["cwd-team"]  # TEAMS by default


def test_a_team_file_loads_by_its_path_from_anywhere(folder: Path, tmp_path_factory: pytest.TempPathFactory,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "myteams_path.py").write_text(TEAM_FILE.format(name="path-team"))
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    teams = load_teams([f"{folder / 'myteams_path.py'}:TEAMS"])
    assert [t.spec.name for t in teams] == ["path-team"]
    assert teams[0].tools.get("shout")("hi") == "HI"  # its neighbour imported


def test_a_module_that_is_not_there_says_where_it_looked(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    with pytest.raises(TeamLoadError) as missing:
        load_teams(["myteamz:TEAMS"])
    assert str(missing.value) == (
        f"cannot load teams from 'myteamz:TEAMS': No module named 'myteamz' (looked for myteamz.py or a "
        f"myteamz/ package in the working directory {folder} and on the Python path; run from the "
        "folder that holds it, or give its file: path/to/myteamz.py:TEAMS)")
    with pytest.raises(TeamLoadError) as no_file:
        load_teams(["nowhere/myteams.py:TEAMS"])
    assert str(no_file.value) == (f"cannot load teams from 'nowhere/myteams.py:TEAMS': no file "
                                  f"'nowhere/myteams.py' (from the working directory {folder})")


@pytest.mark.parametrize(("spec", "parts"), [
    ("myteams", ("myteams", "TEAMS")), ("myteams:", ("myteams", "TEAMS")),
    ("pkg.teams:MINE", ("pkg.teams", "MINE")), ("dir/my.py:T", ("dir/my.py", "T")),
    ("C:\\teams\\mine.py", ("C:\\teams\\mine.py", "TEAMS")), ("C:\\teams\\mine.py:T", ("C:\\teams\\mine.py", "T")),
])
def test_a_spec_splits_into_module_and_attribute(spec: str, parts: tuple[str, str]) -> None:
    assert split_spec(spec) == parts


def test_the_help_lists_serve_and_every_queue_flag() -> None:
    from durable_teams.cli.command_line import parser

    top = parser().format_help()
    assert re.search(r"^\s+serve\s+the HTTP gateway", top, re.M), top
    commands = {name: sub for action in parser()._subparsers._group_actions  # type: ignore[union-attr]
                for name, sub in getattr(action, "choices", {}).items()}
    for name in ("worker", "run", "chat"):
        assert "--task-queue NAME" in commands[name].format_help(), name
    assert "--script FILE" in commands["worker"].format_help()


def test_a_script_beside_teams_is_found_and_a_file_adds_to_it(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_teams.worker.script_files import ScriptError, worker_scripts
    from durable_teams.worker.scripted import say

    (folder / "myteams_cwd.py").write_text(TEAM_FILE.format(name="cwd-team")
                                           + '\nSCRIPT = {"cwd-team": {"supervisor": ["Hi."]}}\n')
    (folder / "more.json").write_text('{"cwd-team": {"echo": [{"say": "Echo."}]}, "faang": {"supervisor": ["x"]}}')
    (folder / "typo.json").write_text('{"cwd-tem": {"echo": ["x"]}}')
    monkeypatch.chdir(folder)
    teams = load_teams(["myteams_cwd"], examples=True)
    found = worker_scripts(["myteams_cwd"], teams, examples=True)
    assert found["cwd-team"] == {"supervisor": [say("Hi.")]} and "support" in found
    assert worker_scripts(["myteams_cwd"], teams, True, "more.json")["faang"] == {"supervisor": [say("x")]}
    assert "support" not in worker_scripts(["myteams_cwd"], load_teams(["myteams_cwd"]), False)
    with pytest.raises(ScriptError, match="the script names team 'cwd-tem', which this worker does not serve"):
        worker_scripts(["myteams_cwd"], teams, True, "typo.json")
