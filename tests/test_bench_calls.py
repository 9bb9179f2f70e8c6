"""The calls benchmark's ceiling: the most calls per second any contender can show when the
run lasts as long as its slowest conversation (bench/calls.py)."""

from __future__ import annotations

import pytest

from bench.calls import CALLS, ceiling

pytestmark = pytest.mark.pure


@pytest.mark.slow  # simulates up to 500 conversations: about a second, 5 s under load
def test_the_ceiling_is_set_by_the_slowest_of_the_conversations() -> None:
    one = ceiling(1, 1.0)
    assert one == pytest.approx(1.0, abs=0.05)  # one conversation: its 10 calls of 1 s on average
    assert ceiling(200, 1.0) == pytest.approx(182, abs=4)  # the slowest of 200 takes about 11 s
    assert ceiling(500, 1.0) > ceiling(200, 1.0) * 2.4
    assert ceiling(200, 0.5) == pytest.approx(2 * ceiling(200, 1.0))  # it scales with the latency
    assert CALLS == 10
