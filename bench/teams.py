"""The teams and scripted model steps the benchmark's worker processes serve (bench/worker_proc.py)."""

from __future__ import annotations

from typing import Any

from bench.failover import clerk_step, failover_team
from bench.run import PARK_TEAM, TEAM, fetch
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.scripted import Step, call, say
from durable_teams.workflows.messages import Budgets, ModelRequest


def http_team(n: int) -> CompiledTeam:
    """The reader team on the HTTP model (bench/model_server.py): N model calls."""
    return Swarm([Agent("reader", "Read documents.", tools=[fetch], model=f"bench-{n}")],
                 budgets=Budgets(max_model_calls=5000, max_tool_calls=5000)).compile()


TEAMS = [TEAM, PARK_TEAM, failover_team()]


def step(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    """The scripted model: `asker` asks once then thanks; `clerk` reads, applies the order
    (named by the workflow id), says what came of it (bench/failover.py); `reader` fetches
    until its N-th call (N from the workflow id `<prefix>-<N>-<suffix>`)."""
    if req.agent == "asker":
        return call("ask_human", question="Go ahead?") if req.agent_call_index == 0 else say("thanks")
    if req.agent == "clerk":
        return clerk_step(req, messages)
    n = int(req.workflow_id.split("-")[1])
    return call("fetch", i=req.agent_call_index) if req.agent_call_index < n - 1 else say("done")
