"""The worker process's garbage-collector settings: `$DURABLE_TEAMS_GC_THRESHOLD` (default
10,000 allocations between young collections, 0 leaves Python's), objects made at start-up
frozen out of collections, and a bad value refused in one line before anything starts."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from durable_teams.worker.settings import GC_ENV, gc_threshold, tune_garbage_collector

from .cli_process import worker_refusal

pytestmark = pytest.mark.pure


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_the_threshold_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GC_ENV, raising=False)
    assert gc_threshold() == 10_000
    monkeypatch.setenv(GC_ENV, "0")
    assert gc_threshold() == 0
    for bad in ("-1", "lots", "1e4"):
        monkeypatch.setenv(GC_ENV, bad)
        with pytest.raises(SystemExit, match=f"{GC_ENV} must be a whole number .*not '{bad}'"):
            gc_threshold()


def test_tuning_freezes_what_exists_and_spaces_young_collections(restore_gc: None) -> None:
    gc.set_threshold(700, 10, 10)
    tune_garbage_collector(10_000)
    assert gc.get_threshold() == (10_000, 10, 10)
    assert gc.get_freeze_count() > 1000  # the modules and objects made so far
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    tune_garbage_collector(0)  # leaves Python's settings
    assert (gc.get_threshold(), gc.get_freeze_count()) == ((700, 10, 10), 0)


@pytest.mark.slow  # starts a process
def test_a_bad_threshold_is_one_line_from_the_worker() -> None:
    assert worker_refusal(**{GC_ENV: "lots"}) == (
        1, "", f"durable-teams worker: {GC_ENV} must be a whole number (0 keeps Python's settings), "
        "not 'lots'")
