"""Quiet output: a failed activity attempt is one line in the worker's log (the SDK's own
warning, with the error's type and message; its traceback at DEBUG on the same logger), and a
benchmark's dev server writes its banner and log lines to a file, not into the tables."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.exceptions import ApplicationError

from bench.procs import output_to
from durable_teams.worker.attempt_log import (
    ACTIVITY_LOGGER,
    OneLineAttempts,
    one_line_attempt_failures,
)

pytestmark = pytest.mark.pure


@pytest.fixture
def log() -> Iterator[tuple[io.StringIO, logging.Logger]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger(ACTIVITY_LOGGER)
    level, filters = logger.level, list(logger.filters)
    logger.addHandler(handler)
    one_line_attempt_failures()
    one_line_attempt_failures()  # once, however often it is called
    try:
        yield out, logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.filters[:] = filters


def fail_attempt() -> None:
    """What the SDK does when an attempt raises (temporalio/worker/_activity.py)."""
    try:
        raise ApplicationError("The model endpoint answered 503: overloaded\n(details)", type="ModelHTTPError")
    except ApplicationError:
        activity.logger.warning("Completing activity as failed", exc_info=True)


def test_a_failed_attempt_is_one_warning_line(log: tuple[io.StringIO, logging.Logger]) -> None:
    out, logger = log
    logger.setLevel(logging.INFO)
    fail_attempt()
    assert out.getvalue().splitlines() == [
        "WARNING Completing activity as failed: ApplicationError: The model endpoint answered 503: overloaded"]
    assert sum(isinstance(f, OneLineAttempts) for f in logger.filters) == 1


def test_at_debug_the_traceback_is_there_too(log: tuple[io.StringIO, logging.Logger]) -> None:
    out, logger = log
    logger.setLevel(logging.DEBUG)
    fail_attempt()
    lines = out.getvalue().splitlines()
    assert lines[0] == "DEBUG Completing activity as failed"
    assert "Traceback (most recent call last):" in lines and "in fail_attempt" in out.getvalue()
    assert lines[-1] == "WARNING Completing activity as failed: ApplicationError: The model endpoint answered 503: overloaded"


def test_other_warnings_keep_their_traceback(log: tuple[io.StringIO, logging.Logger]) -> None:
    out, logger = log
    try:
        raise ValueError("boom")
    except ValueError:
        logger.warning("something else", exc_info=True)
    assert "Traceback" in out.getvalue()


@pytest.mark.slow  # starts a dev server
def test_a_benchmarks_dev_server_writes_to_its_log_not_the_tables(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """bench/procs.py `dev_server` starts the server inside `output_to`: a child started there
    (the server, which prints a banner and WARN lines) writes to the log, even after the block."""
    log = tmp_path / "server.log"
    with output_to(log):
        child = subprocess.Popen([sys.executable, "-c", "import sys, time; print('banner'); "
                                  "sys.stdout.flush(); sys.stdin.read(); print('WARN later', file=sys.stderr)"],
                                 stdin=subprocess.PIPE)
    print("| table row |")
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(30) == 0
    out, err = capfd.readouterr()
    assert out == "| table row |\n" and err == ""
    assert log.read_text() == "banner\nWARN later\n"
