"""A streamed turn shows each step from the worker's announcement on the live hub
(durable_teams/gateway/core/step_news.py): the same events, in the same order, as the stream
that reads the log at each step, for a fraction of the queries; and when the worker announces
on a hub the gateway does not read (another process, no shared broker), the stream reads the
log at each step as before, shows every step and ends."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.live.hub import LIVE, LocalHub
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .counting import counted
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # two FAANG turns, each on a gateway of its own


async def streamed_turn(client: Client, task_queue: str, worker_hub: LocalHub) -> tuple[list[Any], dict[str, int]]:
    """A FAANG turn over the native turn stream, the worker announcing on `worker_hub`, the
    gateway reading `LIVE`: its events and the queries the gateway asked during it."""
    gateway_client, queries = counted(client)
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT), live_hub=worker_hub), \
            running_gateway(gateway_client, task_queue, live_hub=LIVE) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "faang"})).json()["thread_id"]
        queries.asked.clear()
        async with http.stream("POST", f"/threads/{thread}/turns", json={"text": faang.QUESTION}) as response:
            assert response.status_code == 200
            events = [json.loads(line[5:]) async for line in response.aiter_lines() if line.startswith("data:")]
    return events, dict(queries.asked)


async def test_announced_steps_stream_as_the_log_reads_them_for_a_fraction_of_the_queries(
        client: Client, task_queue: str) -> None:
    announced, announced_asked = await streamed_turn(client, task_queue, LIVE)
    read, read_asked = await streamed_turn(client, f"{task_queue}-elsewhere", LocalHub())  # not the gateway's

    assert len(announced) == 25 and announced[-1]["type"] == "done" and announced[-1]["text"] == faang.ANSWER
    assert announced == read  # every step, in order, with the same content, either way
    assert read_asked["log_page"] >= 10, read_asked  # read at each step: nothing announced reached it
    # the turn's start (where its events begin) and one read at its end to confirm
    assert announced_asked["log_page"] <= 2, announced_asked
    assert set(announced_asked) == {"log_page"}, announced_asked
