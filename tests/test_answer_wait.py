"""`DURABLE_TEAMS_ANSWER_WAIT` is read when `answer` uses it: a bad value is one line from
`answer`, never a traceback from every command (it was parsed at import)."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest

from durable_teams.cli.answer_commands import answer_wait
from durable_teams.cli.commands import CliError

pytestmark = pytest.mark.pure



@pytest.mark.parametrize("raw", ["abc", "inf", "-1", "0", "nan", ""])
def test_a_bad_answer_wait_is_one_line(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_ANSWER_WAIT", raw)
    with pytest.raises(CliError) as caught:
        answer_wait()
    assert str(caught.value) == (
        f"DURABLE_TEAMS_ANSWER_WAIT must be seconds above 0 and at most 86400, not {raw!r}")


def test_an_answer_wait_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_ANSWER_WAIT", " 2.5 ")
    assert answer_wait() == timedelta(seconds=2.5)
    monkeypatch.delenv("DURABLE_TEAMS_ANSWER_WAIT")
    assert answer_wait() == timedelta(seconds=10)


@pytest.mark.slow  # starts a process
def test_other_commands_do_not_read_it() -> None:
    done = subprocess.run([sys.executable, "-m", "durable_teams", "--help"], capture_output=True, text=True,
                          env={"DURABLE_TEAMS_ANSWER_WAIT": "abc", "PATH": ""}, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr
