"""The step-latency benchmark (bench/step_latency.py) on a small run: every step of every turn
reaches the gateway client once, each read after its model call returned."""

from __future__ import annotations

import argparse

import pytest
from temporalio.client import Client

from bench.step_latency import measure, team

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize(("local_calls", "local_tool"), [(False, False), (True, True)])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_each_step_is_read_once_after_its_model_call(client: Client, local_calls: bool, local_tool: bool) -> None:
    args = argparse.Namespace(turns=2, steps=3, seconds=0.05)
    lags = await measure(client, team(f"steps-{local_calls}", local_calls, local_tool), args)
    assert len(lags) == 6
    assert all(0 <= lag < 30 for lag in lags)
