"""What the CLI says of itself: `--help` of the time travel commands describes the command,
the checkpoint id and each argument, and the top-level examples name them; `serve --help`
names the inbox and every door, and what it prints at start is each door's URL
(tests/test_gateway_cli_threads.py starts it); `mcp --wait` takes only seconds above 0."""

from __future__ import annotations

import pytest

from durable_teams.cli.command_line import commands, parser
from durable_teams.cli.mcp_stdio import parser as mcp_parser
from durable_teams.cli.serve import base_url, door_lines
from durable_teams.cli.serve import parser as serve_parser

pytestmark = pytest.mark.pure

TIME_TRAVEL = ("checkpoints", "fork", "rewind")


@pytest.mark.parametrize("name", TIME_TRAVEL)
def test_time_travel_help_describes_the_command_the_checkpoint_id_and_each_argument(name: str) -> None:
    command, line = commands(parser())[name]
    text = command.format_help()
    assert line
    assert "A checkpoint id is <run tag>.<history event id>" in text, text
    assert f"examples:\n  durable-teams {name} support-1a2b3c" in text, text
    helpless = [a.dest for a in command._actions if a.dest != "help" and not a.help]
    assert helpless == [], f"{name}: arguments without a description: {helpless}"


def test_the_top_level_examples_include_time_travel() -> None:
    text = parser().format_help()
    for example in ("durable-teams checkpoints <workflow-id>", "durable-teams fork <workflow-id> [--at <checkpoint>]",
                    "durable-teams rewind <workflow-id> --to <checkpoint>"):
        assert example in text


def test_serve_help_names_the_inbox_and_every_door() -> None:
    text = serve_parser().format_help()
    for door in ("the web inbox", "/v1/chat/completions", "/v1/responses", "/mcp", "/a2a/<team>"):
        assert door in text, door


@pytest.mark.parametrize("wait", ["-5", "0", "nan", "inf", "soon"])
def test_mcp_wait_takes_only_seconds_above_zero(wait: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        mcp_parser().parse_args(["--wait", wait])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert err[-1].startswith(f"durable-teams mcp: error: argument --wait: '{wait}'"), err
    assert mcp_parser().parse_args(["--wait", "0.5"]).wait == 0.5


def test_the_doors_at_start_are_the_gateways_urls() -> None:
    assert base_url("0.0.0.0", 8000, tls=False) == "http://127.0.0.1:8000"
    assert base_url("::", 8443, tls=True) == "https://[::1]:8443"
    assert base_url("gw.example", 80, tls=False) == "http://gw.example:80"
    lines = door_lines("http://h:1", ["acme"], mcp=True, a2a=False)
    assert lines[0] == "durable-teams gateway at http://h:1 (teams: acme)"
    assert "  MCP:               http://h:1/mcp" in lines
    assert lines[-1] == "  A2A:               not served (pip install 'durable-teams[a2a]')"
