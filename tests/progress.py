"""Progress a person can read while the suite runs: with `-q`, one line per test file as it
finishes (its counts, its time, how far the run is, and the names of its failures) in place of
rows of dots. pytest's own summary still closes the run, after a line naming the tests outside
`slow` that took over `QUICK_SECONDS` (they belong under `slow`, or the quick loop is not quick).
A test's time there leaves out the session-scoped fixtures it happened to set up first: the
session's Temporal dev server starts once, for every test of the process."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Generator

import pytest

OUTCOMES = ("passed", "failed", "skipped", "error", "xfailed", "xpassed")
QUICK_SECONDS = 3.0


class FileProgress:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.left: Counter[str] = Counter()  # tests still to finish, by file
        self.counts: dict[str, Counter[str]] = {}
        self.failed: dict[str, list[str]] = {}
        self.started: dict[str, float] = {}
        self.files_done = 0
        self.run_started = time.monotonic()
        self.unmarked_seconds: defaultdict[str, float] = defaultdict(float)  # outside `slow`: all phases

    @staticmethod
    def file_of(nodeid: str) -> str:
        return nodeid.split("::", 1)[0]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.left = Counter(self.file_of(item.nodeid) for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """With pytest-xdist (`-n`), each worker collects the whole suite: count it once."""
        if not self.left:
            self.left = Counter(self.file_of(nodeid) for nodeid in ids)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started.setdefault(self.file_of(nodeid), time.monotonic())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "slow" not in report.keywords:
            self.unmarked_seconds[report.nodeid] += report.duration - shared_setup_seconds(report)
        outcome = ("xfailed" if hasattr(report, "wasxfail") and report.skipped
                   else "xpassed" if hasattr(report, "wasxfail") and report.passed
                   else "error" if report.failed and report.when != "call" else report.outcome)
        if report.when == "call" or (report.when == "setup" and not report.passed) \
                or (report.when == "teardown" and report.failed):
            path = self.file_of(report.nodeid)
            self.counts.setdefault(path, Counter())[outcome] += 1
            if outcome in ("failed", "error"):
                self.failed.setdefault(path, []).append(report.nodeid.split("::", 1)[-1])

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        path = self.file_of(nodeid)
        self.left[path] -= 1
        if self.left[path] > 0:
            return
        self.files_done += 1
        counts = self.counts.get(path, Counter())
        said = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o]) or "nothing run"
        seconds = time.monotonic() - self.started.get(path, time.monotonic())
        total = sum(1 for n in self.left.values() if n >= 0)
        elapsed = time.monotonic() - self.run_started
        line = (f"{path}: {said} in {seconds:.1f} s  [{self.files_done}/{total} files, "
                f"{elapsed / 60:.0f} min]")
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line, red=bool(self.failed.get(path)))
            for name in self.failed.get(path, []):
                reporter.write_line(f"    FAILED {name}", red=True)


    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        long = [(nodeid, seconds) for nodeid, seconds in sorted(self.unmarked_seconds.items(), key=lambda kv: -kv[1])
                if seconds > QUICK_SECONDS]
        if long:
            terminalreporter.write_line(
                f"{len(long)} test(s) outside `slow` took over {QUICK_SECONDS:g} s (mark them slow): "
                + ", ".join(f"{nodeid} {seconds:.1f} s" for nodeid, seconds in long[:5]), yellow=True)


SHARED_SETUP = "session fixtures set up (s)"
"""The `user_properties` entry of a setup report: the seconds its session-scoped fixtures took
to set up (the session's Temporal dev server), whichever test happened to need them first."""
_session_setup = {"depth": 0, "seconds": 0.0}


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> Generator[None, object, object]:
    """Time the session-scoped fixtures' setup (the outermost one, when one asks for another)."""
    if fixturedef.scope != "session":
        return (yield)
    _session_setup["depth"] += 1
    started = time.monotonic()
    try:
        return (yield)
    finally:
        _session_setup["depth"] -= 1
        if not _session_setup["depth"]:
            _session_setup["seconds"] += time.monotonic() - started


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A setup report carries the seconds of the session's own setup it included (in an xdist
    worker too: `user_properties` travel to the controller), so that is not the test's time."""
    report = yield
    if call.when == "setup" and _session_setup["seconds"]:
        report.user_properties.append((SHARED_SETUP, _session_setup["seconds"]))
        _session_setup["seconds"] = 0.0
    return report


def shared_setup_seconds(report: pytest.TestReport) -> float:
    return sum(float(seconds) for name, seconds in report.user_properties if name == SHARED_SETUP)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
        return
    if config.get_verbosity() < 0:  # the terminal reporter may register after this
        config.pluginmanager.register(FileProgress(config), "file-progress")


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Generator[None, object, object]:
    """With -q, no letter per test (the file's line says it all); counts are unchanged."""
    status = yield
    if config.get_verbosity() < 0 and isinstance(status, tuple) and len(status) == 3:
        category, _, word = status
        return category, "", word
    return status
