"""Cached tool results: `@tool(idempotent=True, cache_seconds=...)` runs once for the same
arguments within the time given, whichever conversation calls it; refused at definition for a
tool that is not idempotent. Pure (the activity run in ActivityEnvironment)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.activities.tool_results import Result
from durable_teams.memory.memory_backends import InMemoryStore
from durable_teams.memory.tool_cache import NAMESPACE
from durable_teams.teams.tools import ToolRegistry, tool
from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.messages import ToolRequest, ToolResult

pytestmark = pytest.mark.pure

RUNS: list[dict[str, Any]] = []


@tool(idempotent=True, cache_seconds=60)
def exchange_rate(base: str, quote: str = "EUR") -> str:
    """Look up an exchange rate (counts its runs)."""
    RUNS.append({"base": base, "quote": quote})
    return f"{base}/{quote} = 0.9{len(RUNS)}"


@tool(idempotent=True, cache_seconds=60)
def moody(fail: bool) -> Result:
    """Fails or hands over: neither is cached."""
    RUNS.append({"fail": fail})
    if fail:
        raise RuntimeError("no")
    return Result("handing over", agent="billing")


def request(name: str, arguments: str, conversation: str) -> ToolRequest:
    return ToolRequest(tool=name, arguments=arguments, tool_call_id="c1",
                       idempotency_key=f"{conversation}/1/0/c1", agent="clerk")


async def run(activities: ToolActivities, req: ToolRequest) -> ToolResult:
    return await ActivityEnvironment().run(activities.run_tool, req)


@pytest.fixture(autouse=True)
def no_runs() -> None:
    RUNS.clear()


async def test_a_cached_tool_runs_once_for_the_same_arguments_across_conversations() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(exchange_rate), store=store)
    first = await run(activities, request("exchange_rate", '{"base": "USD"}', "conv-a"))
    # the same call written another way (default spelled out, keys reordered), another conversation
    second = await run(activities, request("exchange_rate", '{"quote": "EUR", "base": "USD"}', "conv-b"))
    other = await run(activities, request("exchange_rate", '{"base": "GBP"}', "conv-b"))
    assert RUNS == [{"base": "USD", "quote": "EUR"}, {"base": "GBP", "quote": "EUR"}]
    assert first == ToolResult(content="USD/EUR = 0.91")
    assert second.content.startswith("USD/EUR = 0.91\n\n[cached result from ")
    assert second.content.endswith("s ago, reused for the same arguments]") and not second.is_error
    assert other == ToolResult(content="GBP/EUR = 0.92")
    assert len(await store.search(NAMESPACE)) == 2


async def test_an_expired_result_runs_the_tool_again() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(exchange_rate), store=store)
    await run(activities, request("exchange_rate", '{"base": "USD"}', "conv-a"))
    ((ns, key), row), = store._items.items()
    aged = row.item.__class__(ns, key, row.item.value, row.item.created_at,
                              row.item.updated_at - timedelta(seconds=61))
    store._items[(ns, key)] = row.__class__(aged)
    again = await run(activities, request("exchange_rate", '{"base": "USD"}', "conv-b"))
    assert again == ToolResult(content="USD/EUR = 0.92") and len(RUNS) == 2


async def test_errors_and_handoffs_are_not_cached_and_a_broken_store_only_costs_the_cache() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(moody), store=store)
    for _ in range(2):
        assert (await run(activities, request("moody", '{"fail": true}', "c"))).is_error
        assert (await run(activities, request("moody", '{"fail": false}', "c"))).handoff_to == "billing"
    assert len(RUNS) == 4 and await store.search(NAMESPACE) == []

    class Broken(InMemoryStore):
        async def _get(self, *args: Any) -> None:
            raise ConnectionError("down")

        async def _put(self, *args: Any) -> None:
            raise ConnectionError("down")

    broken = ToolActivities(ToolRegistry(exchange_rate), store=Broken())
    for _ in range(2):
        assert not (await run(broken, request("exchange_rate", '{"base": "USD"}', "c"))).is_error
    assert len(RUNS) == 6


def test_only_an_idempotent_tool_that_reads_no_context_can_be_cached() -> None:
    def lookup(q: str) -> str:
        """Look up."""
        return q

    def personal(q: str, context_variables: dict) -> str:
        """Reads the conversation's context."""
        return json.dumps(context_variables)

    with pytest.raises(TeamError, match=r"tool 'lookup' cannot be cached \(cache_seconds=60\).*idempotent=True"):
        tool(lookup, cache_seconds=60)
    with pytest.raises(TeamError, match="reads context_variables"):
        tool(personal, idempotent=True, cache_seconds=60)
    for bad in (0, -1, float("nan"), True, "60"):
        with pytest.raises(TeamError, match="cache_seconds must be a number > 0"):
            tool(lookup, idempotent=True, cache_seconds=bad)
    assert tool(lookup, idempotent=True, cache_seconds=0.5).cache_seconds == 0.5
    assert tool(lookup).cache_seconds is None
