"""A tool's side effect never happens more often than the model is told.

Each case runs one conversation on the dev server with a scripted model, counts the runs of the
tool function, and asserts the exact tool message the model gets back. Timeouts are fractions
of a second; nothing waits out a real backoff.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.activities.tool_results import Result
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import RetryableToolError, current_idempotency_key, tool
from durable_teams.worker.scripted import ScriptedModel, call, raw_call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import running_worker
from .waiting import pending_question, until

pytestmark = pytest.mark.workflow

RUNS: Counter[str] = Counter()
"""Tool name -> times its function started."""
FINISHED: Counter[str] = Counter()
"""Tool name -> times its function got past its side effect."""
KEYS: list[str] = []
RELEASE = threading.Event()
"""Lets the blocking sync tool's thread go once its conversation is over."""

FAST = {"timeout_seconds": 0.3, "retry_interval_seconds": 0.05}


@tool(**FAST)
async def slow_write(note: str) -> str:
    """Writes a note, slowly (outlives its timeout)."""
    RUNS["slow_write"] += 1
    await asyncio.sleep(30)
    FINISHED["slow_write"] += 1
    return "written"


@tool(**FAST)
def blocking_write(note: str) -> str:
    """Blocks like a sync client with no timeout."""
    RUNS["blocking_write"] += 1
    RELEASE.wait(30)
    FINISHED["blocking_write"] += 1
    return "written"


@tool(local=True, **FAST)
async def slow_local() -> str:
    """A local tool that outlives its timeout."""
    RUNS["slow_local"] += 1
    await asyncio.sleep(30)
    FINISHED["slow_local"] += 1
    return "done"


@tool(idempotent=True, max_attempts=3, **FAST)
async def slow_read() -> str:
    """A read that always times out."""
    RUNS["slow_read"] += 1
    await asyncio.sleep(30)
    return "read"


@tool(**FAST)
def flaky_write() -> str:
    """A write whose connection drops."""
    RUNS["flaky_write"] += 1
    raise RetryableToolError("connection reset")


@tool(idempotent=True, max_attempts=3, **FAST)
def flaky_read() -> str:
    """A read that works on the third try."""
    RUNS["flaky_read"] += 1
    if RUNS["flaky_read"] < 3:
        raise RetryableToolError("connection reset")
    return f"read on run {RUNS['flaky_read']}"


@tool(idempotent=True, max_attempts=2, **FAST)
def down_read() -> str:
    """A read whose service is down."""
    RUNS["down_read"] += 1
    raise RetryableToolError("service down")


def exits() -> str:
    """Calls sys.exit by mistake."""
    RUNS["exits"] += 1
    raise SystemExit(3)


def interrupts() -> str:
    """Raises KeyboardInterrupt."""
    RUNS["interrupts"] += 1
    raise KeyboardInterrupt


async def async_exits() -> str:
    """An async tool that raises SystemExit."""
    RUNS["async_exits"] += 1
    raise SystemExit("bye")


def circular() -> dict:
    """Returns a structure JSON cannot encode."""
    RUNS["circular"] += 1
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def tuple_keys() -> dict:
    """Returns a dict with tuple keys."""
    RUNS["tuple_keys"] += 1
    return {(1, 2): "x"}


def surrogate() -> str:
    """Returns a lone surrogate."""
    RUNS["surrogate"] += 1
    return "a\ud800b"


def echo(text: str) -> str:
    """Echoes its argument."""
    RUNS["echo"] += 1
    return f"echo {text}"


def huge_context() -> Result:
    """Tries to store 100 kB in the context."""
    RUNS["huge_context"] += 1
    return Result(value="stored", context_variables={"blob": "x" * 100_000})


def show_context(context_variables: dict) -> str:
    """Lists the context keys."""
    return ",".join(sorted(context_variables)) or "empty"


def gives_generator() -> Any:
    """Returns a generator by mistake."""
    RUNS["gives_generator"] += 1
    return (i for i in range(3))


async def forgets_await() -> Any:
    """Returns a coroutine by mistake."""
    RUNS["forgets_await"] += 1
    return asyncio.sleep(0)


@tool(needs_approval=True, **FAST)
async def approved_refund(amount: int) -> str:
    """Refunds, after a person approves; hangs past its timeout."""
    RUNS["approved_refund"] += 1
    await asyncio.sleep(30)
    FINISHED["approved_refund"] += 1
    return "refunded"


def charge(amount: int, idempotency_key: str) -> str:
    """Charges a card."""
    RUNS["charge"] += 1
    KEYS.append(idempotency_key)
    assert current_idempotency_key() == idempotency_key
    return f"charged {amount}"


TOOLS = [slow_write, blocking_write, slow_local, slow_read, flaky_write, flaky_read, down_read,
         exits, interrupts, async_exits, circular, tuple_keys, surrogate, echo, huge_context,
         show_context, gives_generator, forgets_await, charge, approved_refund]

NOT_RETRIED = "The tool may or may not have completed; it was not retried."
RAN = "Its side effects, if any, happened; it was not retried."


@dataclass
class Case:
    tool: str
    step: Message
    runs: int
    message: str
    finished: int = 0


CASES = [
    Case("slow_write", call("slow_write", note="hi"), 1,
         f"Error: slow_write did not finish within 0.3s. {NOT_RETRIED}"),
    Case("blocking_write", call("blocking_write", note="hi"), 1,
         f"Error: blocking_write did not finish within 0.3s. {NOT_RETRIED}"),
    Case("slow_local", call("slow_local"), 1,
         f"Error: slow_local did not finish within 0.3s. {NOT_RETRIED}"),
    Case("slow_read", call("slow_read"), 3,
         "Error: slow_read did not finish within 0.3s (it is idempotent and was run up to 3 "
         "times). It may or may not have completed."),
    Case("flaky_write", call("flaky_write"), 1,
         f"Error: flaky_write failed: flaky_write: connection reset. {NOT_RETRIED}"),
    Case("flaky_read", call("flaky_read"), 3, "read on run 3"),
    Case("down_read", call("down_read"), 2,
         "Error: down_read failed: down_read: service down (it is idempotent and was run up to 2 "
         "times). It may or may not have completed."),
    Case("exits", call("exits"), 1, "Error: SystemExit: 3"),
    Case("interrupts", call("interrupts"), 1, "Error: KeyboardInterrupt"),
    Case("async_exits", call("async_exits"), 1, "Error: SystemExit: bye"),
    Case("circular", call("circular"), 1,
         f"Error: circular ran but returned a value JSON cannot encode (ValueError: Circular "
         f"reference detected). {RAN}"),
    Case("tuple_keys", call("tuple_keys"), 1,
         "Error: tuple_keys ran but returned a value JSON cannot encode (TypeError: keys must be "
         f"str, int, float, bool or None, not tuple). {RAN}"),
    Case("surrogate", call("surrogate"), 1, "a?b"),
    Case("echo", raw_call("echo", '{"text": "x\\ud800y"}'), 1, "echo x?y"),
    Case("huge_context", call("huge_context"), 1,
         "Error: huge_context ran but returned a context_variables update of 100,012 bytes, over "
         f"the 65,536-byte limit; the update was not applied. {RAN}"),
    Case("gives_generator", call("gives_generator"), 1,
         f"Error: gives_generator ran but returned a generator instead of a value (return a list "
         f"instead). {RAN}"),
    Case("forgets_await", call("forgets_await"), 1,
         "Error: forgets_await ran but returned an awaitable that was never awaited instead of a "
         f"value. {RAN}"),
]


def team() -> Swarm:
    return Swarm([Agent("clerk", "You run tools.", tools=TOOLS)])


async def converse(client: Client, task_queue: str, steps: list[Message]) -> tuple[str, list[Message]]:
    compiled = team().compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel({"clerk": steps})):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task="go"),
            id=f"tool-safety-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        result = await asyncio.wait_for(handle.result(), 60)
        full = await handle.query(TeamWorkflow.transcript, True)
    return result.answer, full


def tool_messages(full: list[Message]) -> list[str]:
    return [m.content or "" for m in full if m.role == "tool"]


@pytest.fixture(autouse=True)
def counters() -> Any:
    RUNS.clear()
    FINISHED.clear()
    KEYS.clear()
    RELEASE.clear()
    yield
    RELEASE.set()  # the blocking tool's thread ends; its late result is discarded


@pytest.mark.parametrize("case", CASES, ids=[c.tool for c in CASES])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_one_run_and_the_exact_message(client: Client, task_queue: str, case: Case) -> None:
    answer, full = await converse(client, task_queue, [case.step, call("show_context"), say("done")])
    assert answer == "done"  # the conversation went on: no retry loop, no crash
    assert RUNS[case.tool] == case.runs
    assert FINISHED[case.tool] == case.finished
    assert tool_messages(full) == [case.message, "empty"]


async def test_two_calls_with_the_same_id_get_distinct_keys(client: Client, task_queue: str) -> None:
    twice = Message(role="assistant", content="", tool_calls=[
        ToolCall(id="dup", name="charge", arguments='{"amount": 1}'),
        ToolCall(id="dup", name="charge", arguments='{"amount": 2}')])
    answer, full = await converse(client, task_queue, [twice, say("done")])
    assert answer == "done" and RUNS["charge"] == 2
    assert sorted(tool_messages(full)) == ["charged 1", "charged 2"]
    assert len(set(KEYS)) == 2
    assert sorted(k.split("/", 1)[1] for k in KEYS) == ["1/0/dup", "1/1/dup"]


async def test_a_late_result_of_a_blocking_tool_is_discarded(client: Client, task_queue: str) -> None:
    answer, full = await converse(client, task_queue, [call("blocking_write", note="x"), say("done")])
    assert tool_messages(full) == [f"Error: blocking_write did not finish within 0.3s. {NOT_RETRIED}"]
    RELEASE.set()
    async def finished() -> int:  # the thread finishes its side effect once, after the model was told
        return FINISHED["blocking_write"]
    await until(finished, "the blocking tool's thread finished", every=0.01)
    assert (RUNS["blocking_write"], FINISHED["blocking_write"]) == (1, 1)


async def test_an_approved_tool_that_times_out_runs_once(client: Client, task_queue: str) -> None:
    compiled = team().compile()
    steps = [call("approved_refund", amount=5), say("done")]
    async with running_worker(client, task_queue, [compiled], ScriptedModel({"clerk": steps})):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task="go"),
            id=f"tool-safety-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        question = await pending_question(handle)
        assert question.kind == "approval" and RUNS["approved_refund"] == 0
        await handle.execute_update(TeamWorkflow.answer, HumanReply(
            question_id=question.question_id, approved=True))
        result = await asyncio.wait_for(handle.result(), 60)
        full = await handle.query(TeamWorkflow.transcript, True)
    assert result.answer == "done"
    assert (RUNS["approved_refund"], FINISHED["approved_refund"]) == (1, 0)
    assert tool_messages(full) == [f"Error: approved_refund did not finish within 0.3s. {NOT_RETRIED}"]


def test_arguments_with_a_lone_surrogate_can_still_be_scheduled() -> None:
    from durable_teams.workflows.tool_calls import sendable

    assert sendable('{"text": "x\ud800y"}') == '{"text": "x?y"}'
    assert sendable('{"text": "caf\u00e9 \U0001f600"}') == '{"text": "caf\u00e9 \U0001f600"}'
