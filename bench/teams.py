"""The teams and scripted model steps the benchmark's worker processes serve (bench/worker_proc.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.run import PARK_TEAM, TEAM, fetch
from durable_teams.activities.tools import tool
from durable_teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.scripted import Step, call, say
from durable_teams.workflows.messages import Budgets, ModelCalls, ModelRequest

SIDE_EFFECTS = "BENCH_SIDE_EFFECTS"
"""Directory where `apply_order` records what it did (set by the failover benchmark)."""


@tool(needs_approval=True, idempotent=True, timeout_seconds=10, max_attempts=20)
def apply_order(order: str, idempotency_key: str = "") -> str:
    """Apply an order (needs a person's approval). Done once per idempotency key: a retry after
    a worker died mid-call finds the record and does not apply it again."""
    folder = Path(os.environ[SIDE_EFFECTS])
    with open(folder / "attempts.log", "a") as log:
        log.write(order + "\n")
    try:
        fd = os.open(folder / idempotency_key.replace("/", "_"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return f"order {order} was already applied"
    os.write(fd, order.encode())
    os.close(fd)
    return f"order {order} applied"


def failover_team(timeout_seconds: float = 10.0) -> CompiledTeam:
    team = Swarm([Agent("clerk", "Read, then apply the order.", tools=[fetch, apply_order], model="scripted")],
                 budgets=Budgets(max_model_calls=50, max_tool_calls=50)).compile()
    team.spec.model_calls = ModelCalls(timeout_seconds=timeout_seconds, max_attempts=10,
                                       total_timeout_seconds=300, worker_queue_seconds=timeout_seconds / 2)
    return team


def http_team(n: int) -> CompiledTeam:
    """The reader team on the HTTP model (bench/model_server.py): N model calls."""
    return Swarm([Agent("reader", "Read documents.", tools=[fetch], model=f"bench-{n}")],
                 budgets=Budgets(max_model_calls=5000, max_tool_calls=5000)).compile()


TEAMS = [TEAM, PARK_TEAM, failover_team()]


def step(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    """The scripted model: `asker` asks once then thanks; `clerk` reads, applies the order
    (named by the workflow id), answers; `reader` fetches until its N-th call (N from the
    workflow id `<prefix>-<N>-<suffix>`)."""
    if req.agent == "asker":
        return call("ask_human", question="Go ahead?") if req.agent_call_index == 0 else say("thanks")
    if req.agent == "clerk":
        script = [call("fetch", i=0), call("apply_order", order=req.workflow_id), say("done")]
        return script[min(req.agent_call_index, 2)]
    n = int(req.workflow_id.split("-")[1])
    return call("fetch", i=req.agent_call_index) if req.agent_call_index < n - 1 else say("done")
