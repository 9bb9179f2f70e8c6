"""The failover scenario, shared by the benchmark (`python -m bench.scale failover`) and the test
suite (tests/test_failover.py).

A clerk reads a document, then applies an order that needs a person's approval, then says what
became of it. `apply_order` records every attempt, and applies an order once per idempotency
key (as a real idempotent tool does), so a retry after a worker died mid-call finds its record;
the reader counts what was applied per order. The worker processes (bench/worker_proc.py) serve
the team with its default timeouts; a client that wants failover to be fast starts conversations
with `failover_team(...)` built with small ones (the spec travels with the conversation).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from bench.run import fetch
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import Step, call, say
from durable_teams.workflows.messages import Budgets, ModelCalls, ModelRequest

SIDE_EFFECTS = "BENCH_SIDE_EFFECTS"
"""Environment variable: the directory where `apply_order` records what it did."""
ATTEMPTS = "attempts.log"


def apply_order(order: str, idempotency_key: str = "") -> str:
    """Apply an order (needs a person's approval). Done once per idempotency key: a retry after
    a worker died mid-call finds the record, does not apply it again, and answers the same."""
    folder = Path(os.environ[SIDE_EFFECTS])
    with open(folder / ATTEMPTS, "a") as log:
        log.write(f"{order} {os.getpid()}\n")
    try:
        fd = os.open(folder / f"applied-{idempotency_key.replace('/', '_')}",
                     os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return f"order {order} applied"
    os.write(fd, order.encode())
    os.close(fd)
    hold(folder)
    return f"order {order} applied"


def hold(folder: Path, at_most: float = 30.0) -> None:
    """While this worker process is held (`hold_worker`), do not answer: the order is applied,
    the worker has not reported it yet. Killing the worker now leaves the server a call it must
    retry elsewhere."""
    gate, deadline = folder / f"hold-{os.getpid()}", time.monotonic() + at_most
    while gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def hold_worker(folder: Path, pid: int) -> None:
    """Make the worker process `pid` hold every order it applies unreported (until `release`)."""
    (folder / f"hold-{pid}").touch()


def release(folder: Path) -> None:
    """Let every held worker answer."""
    for gate in folder.glob("hold-*"):
        gate.unlink(missing_ok=True)


def failover_team(model_seconds: float = 10.0, tool_seconds: float = 10.0,
                  worker_queue_seconds: float | None = None) -> CompiledTeam:
    """The clerk's team. `model_seconds` bounds a model call's attempt, `tool_seconds` a tool's:
    a call that was running on a killed worker is retried after that long. A model call waiting
    on a dead worker's own queue moves to the shared queue after `worker_queue_seconds`
    (default: half of `model_seconds`)."""
    reader = tool(fetch, idempotent=True, timeout_seconds=tool_seconds, max_attempts=20)
    order = tool(apply_order, needs_approval=True, idempotent=True, timeout_seconds=tool_seconds,
                 max_attempts=20)
    team = Swarm([Agent("clerk", "Read, then apply the order.", tools=[reader, order], model="scripted")],
                 budgets=Budgets(max_model_calls=50, max_tool_calls=50)).compile()
    team.spec.model_calls = ModelCalls(
        timeout_seconds=model_seconds, max_attempts=10, total_timeout_seconds=300,
        retry_interval_seconds=min(1.0, model_seconds / 4),
        worker_queue_seconds=worker_queue_seconds or model_seconds / 2)
    return team


def clerk_step(req: ModelRequest, messages: list[dict[str, Any]]) -> Step:
    """Read, apply the order named by the workflow id, then say what the tool answered."""
    if req.agent_call_index == 0:
        return call("fetch", i=0)
    if req.agent_call_index == 1:
        return call("apply_order", order=req.workflow_id)
    last = next(m for m in reversed(messages) if m.get("role") == "tool")
    return say(f"done: {last['content']}")


def expected_answer(order: str, approved: bool) -> str:
    """The clerk's last words when the person approved (or denied) `order`."""
    if approved:
        return f"done: order {order} applied"
    return "done: The user denied apply_order. It was not run."


def read_effects(folder: Path) -> tuple[Counter[str], list[tuple[str, int]]]:
    """(applications per order, every attempt as (order, worker process id)) as `apply_order`
    recorded them."""
    applied = Counter(p.read_text() for p in folder.glob("applied-*"))
    log = folder / ATTEMPTS
    lines = log.read_text().splitlines() if log.exists() else []
    return applied, [(order, int(pid)) for order, pid in (line.split() for line in lines)]


def _seconds(event: Any) -> float:
    return event.event_time.seconds + event.event_time.nanos / 1e9


def _identity(event: Any) -> str:
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        return str(event.workflow_task_started_event_attributes.identity)
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        return str(event.activity_task_started_event_attributes.identity)
    return ""


async def holder(handle: WorkflowHandle) -> str:
    """The identity of the worker that ran the conversation's last workflow task (the worker
    that holds it in its cache); "" once it is closed."""
    last = ""
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            last = e.workflow_task_completed_event_attributes.identity
        elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            return ""
    return last


async def busiest(handles: list[WorkflowHandle], identities: list[str]) -> tuple[str, Counter[str]]:
    """Of the workers named by `identities`, the one holding most of the open conversations
    among `handles` (the first on a tie), and how many each holds."""
    held = Counter([await holder(h) for h in handles])
    return max(identities, key=lambda i: held[i]), held


async def pickup_delay(handle: WorkflowHandle, victim: str, killed_at: float) -> float | None:
    """Seconds from the kill to a survivor's first task in a conversation the victim worked on
    last before the kill (None: the victim did not hold it). A conversation waiting for a person
    counts until the answer that came after the kill was taken up."""
    last_before, picked = "", None
    async for e in handle.fetch_history_events():
        at = _seconds(e)
        if at < killed_at:
            last_before = _identity(e) or last_before
        elif _identity(e) not in ("", victim):
            picked = at
            break
    if last_before != victim or picked is None:
        return None
    return picked - killed_at
