"""The tool registry and the tool activities, run in Temporal's ActivityEnvironment."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import durable_teams.activities.tool_activities as tools_module
from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.activities.tool_results import Result
from durable_teams.examples.faang import add
from durable_teams.teams.tools import (
    RetryableToolError,
    Tool,
    ToolRegistry,
    current_idempotency_key,
    tool,
)
from durable_teams.workflows.messages import ToolRequest, ToolResult

pytestmark = pytest.mark.pure


def request(name: str, arguments: str = "{}", **extra: Any) -> ToolRequest:
    fields: dict[str, Any] = {"tool_call_id": "call_1", "idempotency_key": "wf-1/call_1",
                              "agent": "clerk", **extra}
    return ToolRequest(tool=name, arguments=arguments, **fields)


async def run(registry: ToolRegistry, req: ToolRequest, local: bool = False) -> ToolResult:
    activities = ToolActivities(registry)
    fn = activities.run_local_tool if local else activities.run_tool
    return await ActivityEnvironment().run(fn, req)


async def async_add(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def flaky() -> str:
    """Fails like a network would."""
    raise RetryableToolError("connection reset")


def transfer(amount: float, context_variables: dict) -> Result:
    """Move money and hand over to billing."""
    context_variables["mutated"] = True  # a copy: the request is untouched
    balance = context_variables["balance"] - amount
    return Result(value=f"new balance {balance}", agent="billing",
                  context_variables={"balance": balance})


def charge(amount: float, idempotency_key: str) -> str:
    """A side effect made safe to retry."""
    return f"{idempotency_key}:{current_idempotency_key()}:{amount}"


async def charge_async() -> str:
    """Reads the key without declaring it."""
    return current_idempotency_key()


class Receipt(BaseModel):
    total: float


def receipt() -> Receipt:
    """Returns a pydantic model."""
    return Receipt(total=3.5)


def nothing() -> None:
    """Returns None."""


def structured() -> dict[str, Any]:
    """Returns data JSON cannot encode natively."""
    return {"when": datetime.date(2024, 1, 2), "n": 1}


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(add, async_add, explode, flaky, transfer, charge, charge_async, receipt,
                        nothing, structured)


async def test_sync_and_async_tools(registry: ToolRegistry) -> None:
    assert await run(registry, request("add", '{"a": 1, "b": 2}')) == ToolResult(content="3.0")
    assert await run(registry, request("async_add", '{"a": 1, "b": 2}')) == ToolResult(content="3")
    assert await run(registry, request("add", '{"a": 1, "b": 2}'), local=True) == ToolResult(content="3.0")


async def test_return_values_are_serialised(registry: ToolRegistry) -> None:
    assert (await run(registry, request("receipt"))).content == '{"total":3.5}'
    assert (await run(registry, request("nothing"))).content == ""
    assert (await run(registry, request("structured"))).content == '{"when": "2024-01-02", "n": 1}'


async def test_exception_becomes_an_error_result(registry: ToolRegistry) -> None:
    result = await run(registry, request("explode", '{"reason": "out of paper"}'))
    assert result == ToolResult(is_error=True, content="Error: RuntimeError: out of paper")


async def test_malformed_json_is_an_error_result_naming_the_tool(registry: ToolRegistry) -> None:
    result = await run(registry, request("add", '{"a": 1,'))
    assert result.is_error
    assert "Invalid JSON in arguments for tool 'add'" in result.content


async def test_wrong_type_is_an_error_result(registry: ToolRegistry) -> None:
    result = await run(registry, request("add", '{"a": "one", "b": 2}'))
    assert result.is_error
    assert "a: Input should be a valid number" in result.content


async def test_unknown_tool_lists_the_available_ones(registry: ToolRegistry) -> None:
    result = await run(registry, request("divide", '{"a": 1, "b": 2}'))
    assert result.is_error
    assert "'divide'" in result.content
    assert "add, async_add, explode" in result.content


async def test_context_is_injected_and_result_updates_returned(registry: ToolRegistry) -> None:
    req = request("transfer", '{"amount": 30}', context={"balance": 100})
    result = await run(registry, req)
    assert result == ToolResult(content="new balance 70.0", handoff_to="billing",
                                context_updates={"balance": 70.0})
    assert req.context == {"balance": 100}


async def test_result_agent_may_be_an_object_with_a_name() -> None:
    class Billing:
        name = "billing"

    def hand_over() -> Result:
        """Hand over."""
        return Result(value="over", agent=Billing())  # type: ignore[arg-type]

    result = await run(ToolRegistry(hand_over), request("hand_over"))
    assert result.handoff_to == "billing" and result.content == "over"


async def test_idempotency_key_reaches_the_tool(registry: ToolRegistry) -> None:
    result = await run(registry, request("charge", '{"amount": 5}'))
    assert result.content == "wf-1/call_1:wf-1/call_1:5.0"
    assert (await run(registry, request("charge_async"))).content == "wf-1/call_1"
    assert current_idempotency_key() == ""  # reset after the call


async def test_sync_tools_run_off_the_event_loop() -> None:
    ticks = 0
    both_running = threading.Barrier(2, timeout=10)  # passes only if the two calls overlap

    def slow(label: str) -> str:
        """Sleeps like a blocking client would."""
        both_running.wait()
        before = ticks
        time.sleep(0.2)
        return f"{label}:{ticks - before}"

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    registry = ToolRegistry(slow)
    ticking = asyncio.create_task(ticker())
    try:
        results = await asyncio.gather(run(registry, request("slow", '{"label": "x"}')),
                                       run(registry, request("slow", '{"label": "y"}')))
    finally:
        ticking.cancel()
    for result, label in zip(results, "xy", strict=True):
        assert not result.is_error, result.content
        name, progressed = result.content.split(":")
        assert name == label and int(progressed) > 0  # the loop ticked while the tool slept


async def test_retryable_tool_error_raises_a_retryable_application_error(registry: ToolRegistry) -> None:
    with pytest.raises(ApplicationError) as caught:
        await run(registry, request("flaky"))
    assert caught.value.type == "RetryableToolError"
    assert not caught.value.non_retryable
    assert "connection reset" in str(caught.value)


async def test_oversized_output_is_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools_module, "MAX_RESULT_BYTES", 10)

    def loud() -> str:
        """Loud."""
        return "x" * 50

    result = await run(ToolRegistry(loud), request("loud"))
    assert result.content.startswith("x" * 10 + "\n[truncated: the tool returned 50 bytes")


def test_tool_decorator_forms_and_spec() -> None:
    @tool
    def plain(q: str) -> str:
        """Plain."""
        return q

    @tool(local=True, name="lookup", description="Look it up.", needs_approval=True,
          return_direct=True, timeout_seconds=5, idempotent=True, max_attempts=2, task_queue="io")
    def configured(q: str, context_variables: dict) -> str:
        """Ignored."""
        return q

    assert isinstance(plain, Tool) and plain("hi") == "hi"
    assert plain.spec.name == "plain" and plain.spec.description == "Plain."
    assert plain.spec.context_params == [] and not plain.spec.local
    spec = configured.spec
    assert (spec.name, spec.description, spec.local, spec.needs_approval, spec.return_direct) == (
        "lookup", "Look it up.", True, True, True)
    assert (spec.timeout_seconds, spec.max_attempts, spec.idempotent, spec.task_queue) == (5, 2, True, "io")
    assert plain.spec.max_attempts == 1 and not plain.spec.idempotent  # at most once by default
    assert spec.context_params == ["context_variables"]
    assert set(spec.parameters["properties"]) == {"q"}
    wrapped = tool(add)
    assert wrapped.spec.parameters["required"] == ["a", "b"]
    assert tool(wrapped, local=True).fn is add


async def test_registered_name_is_used_in_errors() -> None:
    registry = ToolRegistry(tool(add, name="plus"))
    result = await run(registry, request("plus", "{"))
    assert result.is_error and "tool 'plus'" in result.content


def test_registry() -> None:
    registry = ToolRegistry()
    registry.register(add, tool(explode))
    registry.register(add)  # the same function again is fine
    assert "add" in registry and "divide" not in registry
    assert registry.names() == ["add", "explode"]
    assert registry.get("add").fn is add
    assert set(registry.specs()) == {"add", "explode"}
    assert registry.specs()["add"].parameters["required"] == ["a", "b"]

    def other_add(x: int) -> int:
        """Another add."""
        return x

    with pytest.raises(ValueError, match="'add'"):
        registry.register(tool(other_add, name="add"))
