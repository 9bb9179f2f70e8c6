"""The order in which test files go to pytest-xdist's workers (`--dist loadfile`): the longest
first, so that no long file starts last while the other workers sit idle at the end of the run.
xdist's own order is by how many tests a file has, which put a one-test file of twenty seconds
(tests/test_newcomer.py) among the last to start. The expected seconds of a file come from
`file_seconds.json` (its time in a CI run; files under five seconds are left out); a file not
there counts `SECONDS_PER_TEST` a test. Only the order changes: every file still runs whole in
one worker."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

SECONDS_PER_TEST = 0.3
KNOWN = json.loads((Path(__file__).parent / "file_seconds.json").read_text())


def expected_seconds(file: str, tests: int) -> float:
    """How long `file` (its name under tests/) is expected to take, with `tests` tests."""
    return float(KNOWN.get(file, tests * SECONDS_PER_TEST))


def pytest_configure(config: pytest.Config) -> None:
    # xdist sorts files by their number of tests unless told not to: keep the order made below
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files longest first, each file's tests in their own order (every worker collects the
    same order: xdist checks that they agree)."""
    def file_of(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    counts = Counter(file_of(item) for item in items)
    weight = {file: expected_seconds(Path(file).name, n) for file, n in counts.items()}
    items.sort(key=lambda item: -weight[file_of(item)])  # stable: a file's tests keep their order
