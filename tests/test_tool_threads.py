"""Sync tools run on reused daemon threads: a call waits for no thread to start when one is
idle, and a tool stuck in its thread never keeps other calls from running."""

from __future__ import annotations

import asyncio
import threading

import pytest

from durable_teams.activities.tool_threads import Escaped, ToolThreads, in_thread

pytestmark = pytest.mark.pure


async def test_sequential_calls_reuse_one_thread() -> None:
    pool = ToolThreads()
    names = []
    for _ in range(5):
        done = asyncio.get_running_loop().create_future()
        pool.submit(lambda f=done: (names.append(threading.current_thread().name),
                                    lambda: f.get_loop().call_soon_threadsafe(f.set_result, None))[1])
        await asyncio.wait_for(done, 10)
    assert pool.started == 1 and names == ["tool"] * 5


async def test_a_stuck_tool_keeps_its_thread_and_others_still_run() -> None:
    release = threading.Event()
    stuck = in_thread(release.wait, [30], {})
    assert await asyncio.wait_for(in_thread(lambda x: x * 2, [21], {}), 10) == 42
    release.set()
    assert await asyncio.wait_for(stuck, 10) is True


async def test_idle_threads_beyond_the_limit_exit() -> None:
    pool = ToolThreads(max_idle=1)
    gate = threading.Barrier(3, timeout=10)
    finished = [asyncio.get_running_loop().create_future() for _ in range(3)]
    for f in finished:
        pool.submit(lambda f=f: (gate.wait(),
                                 lambda: f.get_loop().call_soon_threadsafe(f.set_result, None))[1])
    await asyncio.wait_for(asyncio.gather(*finished), 10)
    # each thread handed its outcome back after settling: one stays idle, the others exit
    assert (pool.started, pool.idle) == (3, 1)


async def test_what_a_tool_raises_comes_back_to_the_caller() -> None:
    def fails() -> None:
        raise ValueError("no")

    def exits() -> None:
        raise SystemExit(3)

    for fn, kind in ((fails, ValueError), (exits, Escaped)):
        try:
            await asyncio.wait_for(in_thread(fn, [], {}), 10)
        except kind:
            continue
        raise AssertionError(f"{fn.__name__} did not raise {kind.__name__}")
