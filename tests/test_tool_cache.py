"""Cached tool results: `@tool(idempotent=True, cache_seconds=...)` runs once for the same
arguments within the time given, whichever conversation calls it; refused at definition for a
tool that is not idempotent. Pure (the activity run in ActivityEnvironment)."""

from __future__ import annotations

import functools
import json
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.activities.tool_results import Result
from durable_teams.memory.memory_backends import InMemoryStore
from durable_teams.memory.tool_cache import NAMESPACE, CallIdentity, cache_key, function_identity
from durable_teams.teams.team_tools import ToolsByTeam
from durable_teams.teams.tools import ToolRegistry, tool
from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.messages import TeamSpec, ToolRequest, ToolResult

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


def request(name: str, arguments: str, conversation: str, team: str | None = None,
            tenant: str | None = None) -> ToolRequest:
    return ToolRequest(tool=name, arguments=arguments, tool_call_id="c1",
                       idempotency_key=f"{conversation}/1/0/c1", agent="clerk", team=team, tenant=tenant)


def shop_rate(currency: str) -> str:
    """The shop's rate for a currency (counts its runs)."""
    RUNS.append({"shop": currency})
    return f"shop rate for {currency}: 1.10"


def bank_rate(currency: str) -> str:
    """The bank's rate for a currency (counts its runs)."""
    RUNS.append({"bank": currency})
    return f"bank rate for {currency}: 1.30"


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


async def test_two_teams_tools_of_one_name_never_share_a_cached_result() -> None:
    """Team shop's `rate` and team bank's `rate` are two functions of one tool name: each call
    runs its own team's function (counted), and the second call of each is that team's cache."""
    shop = ToolRegistry(tool(shop_rate, name="rate", idempotent=True, cache_seconds=60))
    bank = ToolRegistry(tool(bank_rate, name="rate", idempotent=True, cache_seconds=60))
    teams = ToolsByTeam()
    teams.add(TeamSpec(name="shop", agents={}), shop)
    teams.add(TeamSpec(name="bank", agents={}), bank)
    store = InMemoryStore()
    activities = ToolActivities(teams, store=store)
    first_shop = await run(activities, request("rate", '{"currency": "USD"}', "s1", team="shop"))
    first_bank = await run(activities, request("rate", '{"currency": "USD"}', "b1", team="bank"))
    assert first_shop == ToolResult(content="shop rate for USD: 1.10")
    assert first_bank == ToolResult(content="bank rate for USD: 1.30")
    again_shop = await run(activities, request("rate", '{"currency": "USD"}', "s2", team="shop"))
    again_bank = await run(activities, request("rate", '{"currency": "USD"}', "b2", team="bank"))
    assert again_shop.content.startswith("shop rate for USD: 1.10\n\n[cached result from ")
    assert again_bank.content.startswith("bank rate for USD: 1.30\n\n[cached result from ")
    assert RUNS == [{"shop": "USD"}, {"bank": "USD"}]


async def test_one_teams_tool_under_two_tenants_keeps_a_result_per_tenant() -> None:
    store = InMemoryStore()
    activities = ToolActivities(ToolRegistry(exchange_rate), store=store)
    for tenant in ("acme", "globex", "acme", "globex", None, None):
        result = await run(activities, request("exchange_rate", '{"base": "USD"}', "c", team="t",
                                               tenant=tenant))
        assert not result.is_error
    # one run per tenant (and one for the conversations of no tenant), each reused once
    assert RUNS == [{"base": "USD", "quote": "EUR"}] * 3
    assert len(await store.search(NAMESPACE)) == 3


def test_a_tools_identity_is_its_functions_qualified_name() -> None:
    assert function_identity(shop_rate) == "tests.test_tool_cache.shop_rate"
    assert function_identity(functools.partial(shop_rate, "EUR")) == "tests.test_tool_cache.shop_rate"

    class Rates:
        def __call__(self, currency: str) -> str:
            return currency

    assert function_identity(Rates()).endswith("test_a_tools_identity_is_its_functions_qualified_name.<locals>.Rates")
    one = CallIdentity("shop", "m.rate", None, "{}")
    assert len({cache_key(one), cache_key(CallIdentity("bank", "m.rate", None, "{}")),
                cache_key(CallIdentity("shop", "n.rate", None, "{}")),
                cache_key(CallIdentity("shop", "m.rate", "acme", "{}"))}) == 4
