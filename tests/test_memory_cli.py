"""`durable-teams memory list|get|put|delete`: the store the workers use, from the terminal;
every error one line (no traceback), no password repeated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from durable_teams.cli.memory_commands import main

pytestmark = pytest.mark.pure


@pytest.fixture
def store_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite://{tmp_path}/memory.sqlite3"
    monkeypatch.setenv("DURABLE_TEAMS_MEMORY", url)
    return url


def test_put_list_get_delete_and_forget_a_user(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["put", "users/u-42/memories", "color", '{"text": "blue"}']) == 0
    assert main(["put", "users/u-42/prefs", "lang", '{"text": "French"}']) == 0
    assert main(["put", "users/u-7/prefs", "lang", '{"text": "German"}']) == 0
    capsys.readouterr()
    assert main(["list", "users/u-42", "--query", "french"]) == 0
    assert capsys.readouterr().out == 'users/u-42/prefs  lang  {"text": "French"}\n'
    assert main(["list", "--json", "--filter", '{"text": "German"}']) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["namespace"] == ["users", "u-7", "prefs"]
    assert main(["get", "users/u-42/memories", "color"]) == 0
    assert json.loads(capsys.readouterr().out) == {"text": "blue"}
    assert main(["delete", "users/u-42/memories", "color"]) == 0
    assert main(["get", "users/u-42/memories", "color"]) == "durable-teams memory: no item 'color' in users/u-42/memories"
    assert main(["delete", "users/u-42", "--prefix"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Deleted 1 item under users/u-42."
    assert main(["--store", store_url, "list"]) == 0
    assert capsys.readouterr().out == 'users/u-7/prefs  lang  {"text": "German"}\n'


@pytest.mark.parametrize(("argv", "message"), [
    (["put", "users/u", "k", "[1]"], "the value must be a JSON object"),
    (["put", "users/u", "k", "{nope"], "the value is not JSON"),
    (["put", "", "k", "{}"], "give a namespace"),
    (["list", "--filter", "1"], "--filter must be a JSON object"),
    (["list", "--limit", "0"], "limit must be an integer from 1 to 1000"),
    (["delete", "users/u"], "give the key to delete, or --prefix"),
    (["delete", "users/u", "k", "--prefix"], "give no key with it"),
    (["--store", "mysql://root:hunter2@db/x", "list"], "'mysql://root:***@db/x' is not a store URL"),
    (["--store", "postgresql://app:hunter2@127.0.0.1:1/x", "list"], "the store failed (OperationalError: "),
])
def test_errors_are_one_line(store_url: str, argv: list[str], message: str) -> None:
    code = main(argv)
    assert isinstance(code, str) and message in code and "\n" not in code and "hunter2" not in code


@pytest.mark.slow  # starts a process
def test_the_cli_entry_point_prints_one_line_and_exits_1(store_url: str) -> None:
    env = {**os.environ, "DURABLE_TEAMS_MEMORY": store_url}
    out = subprocess.run([sys.executable, "-m", "durable_teams", "memory", "get", "users/u", "k"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (1, "", "durable-teams memory: no item 'k' in users/u\n")
