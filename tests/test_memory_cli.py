"""`durable-teams memory list|get|put|delete`: the store the workers use, from the terminal;
every error one line (no traceback), no password repeated."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from durable_teams.cli.memory_commands import main, parser
from durable_teams.cli.namespace_syntax import namespace_text, parse_namespace

from .memory_contract import LABELS

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


def test_a_label_holding_a_slash_round_trips_and_a_user_can_be_forgotten(
        store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["put", "--namespace", '["users", "org/alice", "memories"]', "city", '{"text": "Lyon"}']) == 0
    assert capsys.readouterr().out == "Stored city in users/org\\/alice/memories.\n"
    assert main(["list", "users"]) == 0
    assert capsys.readouterr().out == 'users/org\\/alice/memories  city  {"text": "Lyon"}\n'
    assert main(["get", "users/org\\/alice/memories", "city"]) == 0  # what list printed, pasted
    assert json.loads(capsys.readouterr().out) == {"text": "Lyon"}
    assert main(["get", "--namespace", '["users", "org/alice", "memories"]', "city"]) == 0
    capsys.readouterr()
    assert main(["get", "users/org/alice/memories", "city"]) == (
        "durable-teams memory: no item 'city' in users/org/alice/memories (did you mean "
        "users/org\\/alice/memories? a '/' inside a label is written \\/)")
    assert main(["delete", "users/org/alice", "--prefix"]) == 0
    assert capsys.readouterr().out == ("Deleted 0 items under users/org/alice (did you mean "
                                       "users/org\\/alice? a '/' inside a label is written \\/).\n")
    assert main(["delete", "users/org\\/alice", "--prefix"]) == 0
    assert capsys.readouterr().out == "Deleted 1 item under users/org\\/alice.\n"
    assert main(["put", "--namespace", '["users", "a\\\\b/c"]', "k", "{}"]) == 0
    assert capsys.readouterr().out == "Stored k in users/a\\\\b\\/c.\n"
    assert main(["delete", "--namespace", '["users", "a\\\\b/c"]', "k"]) == 0


@pytest.mark.parametrize("label", LABELS)
def test_the_namespace_syntax_round_trips_any_label(label: str) -> None:
    namespace = ("users", label, "x")
    assert parse_namespace(namespace_text(namespace)) == namespace


@pytest.mark.parametrize(("argv", "message"), [
    (["put", "/users/u", "k", "{}"], "namespace '/users/u' has an empty label (a leading, trailing or doubled '/')"),
    (["put", "users/u/", "k", "{}"], "namespace 'users/u/' has an empty label"),
    (["list", "users//u"], "namespace 'users//u' has an empty label"),
    (["delete", "/", "--prefix"], "namespace '/' has an empty label"),
    (["get", "users\\u", "k"], "inside a label write \\/ for '/' and \\\\ for a backslash"),
    (["get", "--namespace", '"users"', "k"], "--namespace must be a JSON list of strings"),
    (["get", "--namespace", '["users"]', "users", "k"], "unexpected 'k' (the namespace is given by --namespace)"),
    (["put", "users/u", "k"], "give the value once: a JSON object as VALUE, or --value-file PATH"),
    (["put", "users/u", "k", "{}", "--value-file", "-"], "give the value once"),
    (["put", "users/u", "k", "--value-file", "/no/such/file.json"],
     "cannot read --value-file /no/such/file.json: No such file or directory"),
    (["put", "users/u", "k", '{"text": "\udcff"}'], "memory: a text of the value holds '\\udcff', a lone surrogate"),
    (["get", "users/u"], "give the key of the item to print"),
])
def test_a_namespace_is_refused_never_changed(store_url: str, argv: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    assert isinstance(code, str) and message in code and "\n" not in code, code
    assert main(["list"]) == 0 and capsys.readouterr().out == ""  # nothing written


def test_keyword_listing_finds_words_joined_by_underscores_and_says_when_nothing_matches(
        store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["put", "users/u-42/memories", "favorite_color", '{"text": "blue"}']) == 0
    capsys.readouterr()
    for query in ("color", "favorite color", "Favorite_Color"):
        assert main(["list", "users/u-42", "--query", query]) == 0
        assert capsys.readouterr().out == 'users/u-42/memories  favorite_color  {"text": "blue"}\n'
    assert main(["list", "users/u-42", "--query", "food"]) == 0
    assert capsys.readouterr() == ("", 'No items under users/u-42 match "food".\n')
    assert main(["list", "users/u-7"]) == 0
    assert capsys.readouterr() == ("", "No items under users/u-7.\n")
    assert main(["list", "--json", "--filter", '{"text": "red"}']) == 0
    assert capsys.readouterr() == ("", 'No items in the store match --filter {"text": "red"}.\n')


def test_a_value_from_a_file_or_stdin(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    long_text = "word " * 100_000  # 500 kB: more than a command line takes
    (tmp_path / "v.json").write_text(json.dumps({"text": long_text}), "utf-8")
    assert main(["put", "users/u", "long", "--value-file", str(tmp_path / "v.json")]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO('{"text": "from stdin"}'))
    assert main(["put", "users/u", "piped", "--value-file", "-"]) == 0
    capsys.readouterr()
    assert main(["get", "users/u", "long"]) == 0 and json.loads(capsys.readouterr().out)["text"] == long_text
    assert main(["get", "users/u", "piped"]) == 0 and json.loads(capsys.readouterr().out) == {"text": "from stdin"}
    (tmp_path / "big.json").write_text(json.dumps({"t": "y" * (1024 * 1024)}), "utf-8")
    assert main(["put", "users/u", "big", "--value-file", str(tmp_path / "big.json")]) == (
        "durable-teams memory: the value is 1,048,585 bytes as JSON, over the 1,048,576-byte limit")


def test_store_is_taken_after_the_subcommand_and_named_in_its_errors(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = f"sqlite://{tmp_path}/other.sqlite3"
    assert main(["put", "users/u", "k", '{"v": 1}', "--store", other]) == 0
    assert main(["list", "--store", other]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == 'users/u  k  {"v": 1}'
    assert main(["--store", other, "list"]) == 0 and "users/u  k" in capsys.readouterr().out
    assert main(["list"]) == 0 and capsys.readouterr().out == ""  # DURABLE_TEAMS_MEMORY's store
    assert main(["list", "--store", "nope"]) == (
        "durable-teams memory: --store: 'nope' is not a store URL; use sqlite:///path, "
        "postgresql://user:password@host:port/db or memory:")


@pytest.mark.parametrize("action", [["list"], ["get", "users/u", "k"], ["put", "users/u", "k", "{}"],
                                    ["delete", "users", "--prefix"]])
def test_a_store_in_a_missing_folder_is_refused_and_nothing_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: list[str]) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    assert main(["--store", f"sqlite://{missing}/m.sqlite3", *action]) == (
        f"durable-teams memory: --store: no folder {missing} for the store file m.sqlite3: create it "
        "first (only the default store's folder is made)")
    monkeypatch.setenv("DURABLE_TEAMS_MEMORY", f"sqlite://{missing}/m.sqlite3")
    code = main(action)
    assert isinstance(code, str) and code.startswith(f"durable-teams memory: DURABLE_TEAMS_MEMORY: no folder {missing}")
    assert not (tmp_path / "no").exists()


def test_reading_a_store_file_not_made_yet_says_so_and_makes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite3"
    assert main(["--store", f"sqlite://{path}", "list", "users/u-42", "--query", "color"]) == 0
    assert capsys.readouterr() == ("", f"No items: the store file {path} does not exist yet (the first "
                                       "put makes it).\n")
    assert not path.exists()


def test_the_help_describes_each_command_and_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    for action, words in [("list", ["List the items whose namespace starts with PREFIX", "PREFIX", "--query WORDS",
                                    "--filter JSON", "--limit N", "--namespace JSON", "--store STORE"]),
                          ("get", ["Print the value of the item KEY", "NAMESPACE", "KEY"]),
                          ("put", ["VALUE", "--value-file PATH", "- for stdin"]),
                          ("delete", ["--prefix", "how a team forgets a user"])]:
        with pytest.raises(SystemExit):
            main([action, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        assert all(" ".join(w.split()) in shown for w in words), (action, shown)


def test_the_help_examples_work_as_written(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.json").write_text('{"text": "likes trains"}', "utf-8")
    description = parser().description or ""
    examples = [line.strip() for line in description.splitlines() if line.strip().startswith("durable-teams memory ")]
    assert len(examples) == 9
    for line in examples:
        argv = shlex.split(line, comments=True)[2:]
        assert main(argv) == 0, line
        out = capsys.readouterr().out
        if "--query" in argv:
            assert out == 'users/u-42/memories  favorite_color  {"text": "blue"}\n', line
    assert main(["list"]) == 0
    assert capsys.readouterr().out == 'users/org\\/alice/memories  city  {"text": "Lyon"}\n'
