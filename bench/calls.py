"""Model calls as local activities against regular ones, side by side in one run (bench.scale).

    python -m bench.scale calls   [--concurrency 50 200 500] [--latencies 1.0 0] [--processes 1]
    python -m bench.scale actions

`calls`: `--processes` worker processes of ours and as many of the floor (bare workflows making
the same calls as regular activities, bench/baseline.py), one scripted HTTP model
(bench/model_server.py) per latency. Ours start as `start_conversation` starts them (a 30 s
workflow task timeout, client/start.py TASK_TIMEOUT); the floor with Temporal's defaults. For
each number of concurrent conversations of 10 model calls and 9 2 KB tool calls, each contender
runs in turn: ours with local model calls (`ModelCalls(local=True)`), ours with local model
calls and a `@tool(local=True)` tool, ours with regular activities (`ModelCalls(local=False)`),
and the floor. Printed per contender: model calls per second, worker and Temporal server CPU per
model call, and history events and bytes per conversation.

`actions`: the Temporal Cloud billable actions of one FAANG turn (the example's one-shot run),
counted from its history by Temporal's published rules (`billable_actions`), with model calls
as local activities and as regular ones.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import procs
from bench.baseline import FloorHTTPWorkflow
from bench.run import fetch
from durable_teams.client.start import TASK_TIMEOUT
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Budgets, ModelCalls, TeamSpec
from durable_teams.workflows.state import ConversationInput

CALLS = 10
"""Model calls per conversation (and CALLS - 1 tool calls)."""


def reader_spec(local_model: bool = True, local_tool: bool = False) -> TeamSpec:
    """The HTTP reader team (bench/teams.py's `http_team`), its calls local or regular."""
    fetcher = tool(fetch, local=True, idempotent=True) if local_tool else fetch
    team = Swarm([Agent("reader", "Read documents.", tools=[fetcher], model=f"bench-{CALLS}")],
                 budgets=Budgets(max_model_calls=5000, max_tool_calls=5000)).compile()
    team.spec.model_calls = ModelCalls(local=local_model)
    return team.spec


CONTENDERS: dict[str, TeamSpec | None] = {
    "ours, ModelCalls(local=True)": reader_spec(),
    "ours, local model calls + local tool": reader_spec(local_tool=True),
    "ours, regular activities (default)": reader_spec(local_model=False),
    "floor (bare workflow, regular activities)": None,
}


JITTER = 0.2
"""The scripted model's spread: each answer takes the latency ± 20 %, uniformly."""


def ceiling(conversations: int, latency: float, trials: int = 200) -> float:
    """The most model calls per second any contender can show: all conversations at once, each
    waiting only for its CALLS model answers, the run as long as its slowest (expected over
    `trials` simulated runs)."""
    draw = random.Random(0).uniform
    slowest = sum(max(sum(latency * (1 + draw(-JITTER, JITTER)) for _ in range(CALLS))
                      for _ in range(conversations)) for _ in range(trials)) / trials
    return conversations * CALLS / slowest


@dataclass
class Tally:
    rates: list[float] = field(default_factory=list)
    worker_cpu: float = 0.0
    server_cpu: float = 0.0
    calls: int = 0
    events: int = 0
    history_bytes: int = 0


async def history_size(client: Client, workflow_id: str) -> tuple[int, int]:
    """(events, bytes of the serialized history) of one conversation."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events)


async def run_one(client: Client, queue: str, spec: TeamSpec | None, count: int) -> tuple[float, str]:
    """`count` conversations (or floor workflows) to the end: seconds taken, one id."""
    ids = [f"calls-{CALLS}-{i}x{uuid.uuid4().hex[:6]}" for i in range(count)]
    t0 = time.perf_counter()
    if spec is None:
        await asyncio.gather(*(client.execute_workflow(FloorHTTPWorkflow.run, CALLS, id=i, task_queue=queue + "-floor")
                               for i in ids))
    else:
        await asyncio.gather(*(client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=spec, task="read", set_search_attributes=False),
            id=i, task_queue=queue, task_timeout=TASK_TIMEOUT) for i in ids))
    return time.perf_counter() - t0, ids[0]


@dataclass
class Workers:
    """A contender's worker processes, their CPU counted together."""

    procs: list[procs.Proc]

    def cpu_seconds(self) -> float:
        return sum(p.cpu_seconds() for p in self.procs)

    async def stop(self) -> None:
        for p in self.procs:
            await p.stop()


async def start_workers(count: int, *args: str) -> Workers:
    return Workers([await procs.worker(*args) for _ in range(count)])


async def calls_mode(client: Client, address: str, concurrency: list[int], latencies: list[float],
                     rounds: int, only: list[str] | None = None, processes: int = 1) -> None:
    if only:
        for name in [n for n in CONTENDERS if not any(word in n for word in only)]:
            del CONTENDERS[name]
    print(f"\n## Local against regular activities: conversations of {CALLS} model calls and "
          f"{CALLS - 1} 2 KB tool calls, {processes} worker process(es) each for ours and the floor "
          f"(2 cores, shared with the dev server and this client); {rounds} round(s), contenders in turn\n")
    for latency in latencies:
        server, url = await procs.model_server(latency, JITTER if latency else 0.0)
        queue = f"calls-{uuid.uuid4().hex[:4]}"
        ours = await start_workers(processes, address, queue, "--model-url", url)
        floor = await start_workers(processes, address, queue + "-floor", "--floor", "--model-url", url)
        temporal = procs.temporal_server()
        try:
            for spec in CONTENDERS.values():  # warm up every path
                await run_one(client, queue, spec, 2)
            print(f"model latency {latency:g} s:\n")
            print("| conversations | contender | model calls/s | worker CPU ms/call | server CPU ms/call "
                  "| events/conversation | history KB/conversation |")
            print("|---:|---|---:|---:|---:|---:|---:|")
            for c in concurrency:
                await one_size(client, queue, c, rounds, ours, floor, temporal)
                if latency:
                    print(f"| {c} | ceiling: the model's latency alone, the run as long as its slowest "
                          f"conversation | {ceiling(c, latency):.0f} | | | | |", flush=True)
        finally:
            await ours.stop()
            await floor.stop()
            server.kill9()
        print()


async def one_size(client: Client, queue: str, c: int, rounds: int, ours: Workers, floor: Workers,
                   temporal: Any) -> None:
    tallies = {name: Tally() for name in CONTENDERS}
    names = list(CONTENDERS)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # a different one first each round
            spec, proc, tally = CONTENDERS[name], (floor if CONTENDERS[name] is None else ours), tallies[name]
            w0, s0 = proc.cpu_seconds(), procs.cpu_of(temporal)
            seconds, some_id = await run_one(client, queue, spec, c)
            tally.worker_cpu += proc.cpu_seconds() - w0
            tally.server_cpu += procs.cpu_of(temporal) - s0
            tally.calls += c * CALLS
            tally.rates.append(c * CALLS / seconds)
            tally.events, tally.history_bytes = await history_size(client, some_id)
    for name, t in tallies.items():
        rate = sorted(t.rates)[len(t.rates) // 2]
        print(f"| {c} | {name} | {rate:.0f} | {t.worker_cpu / t.calls * 1000:.1f} | "
              f"{t.server_cpu / t.calls * 1000:.1f} | {t.events} | {t.history_bytes / 1024:.1f} |", flush=True)


BILLED_ONE_EACH = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,  # workflow started (also continue-as-new's run)
    EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,  # a child workflow started
    EventType.EVENT_TYPE_TIMER_STARTED,
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
}


def billable_actions(events: list[Any]) -> dict[str, int]:
    """Temporal Cloud actions in a history (docs.temporal.io/cloud/actions): one per workflow
    start, timer, search-attribute upsert, signal and accepted update; one per activity attempt
    started; all local activities of one workflow task together one (a workflow task heartbeat
    while one runs: one more, not counted here). Queries and rejected updates leave no event
    here (both are billed); patch markers and their `TemporalChangeVersion` upserts are not."""
    counts = {"workflow, timers, signals, updates, search attributes": 0, "activities": 0,
              "local activities": 0}
    local_tasks: set[int] = set()
    for e in events:
        if (e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES and set(
                e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
                <= {"TemporalChangeVersion"}):
            continue  # a patch's version upsert: exempt
        if e.event_type in BILLED_ONE_EACH:
            counts["workflow, timers, signals, updates, search attributes"] += 1
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            counts["activities"] += max(1, e.activity_task_started_event_attributes.attempt)
        elif (e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
              and e.marker_recorded_event_attributes.marker_name == "core_local_activity"):
            local_tasks.add(e.marker_recorded_event_attributes.workflow_task_completed_event_id)
    counts["local activities"] = len(local_tasks)
    counts["total"] = sum(counts.values())
    return counts


async def actions_mode(client: Client) -> None:
    """A FAANG turn, with local and with regular model calls, in a worker in this process."""
    from durable_teams.examples import faang
    from durable_teams.worker.build import build_worker
    from durable_teams.worker.scripted import ScriptedModel

    print("\n## Temporal Cloud billable actions of one FAANG turn (the example's one-shot run)\n")
    print("| model calls | events | actions | of which: workflow, timers, signals, updates, search "
          "attributes / activities / local activities |")
    print("|---|---:|---:|---|")
    for local in (False, True):
        compiled = faang.build().compile()
        compiled.spec.model_calls = ModelCalls(local=local)
        queue = f"actions-{uuid.uuid4().hex[:4]}"
        async with build_worker(client, [compiled], ScriptedModel(faang.SCRIPT), task_queue=queue):
            handle = await client.start_workflow(TeamWorkflow.run, ConversationInput(
                team=compiled.spec, task=faang.QUESTION), id=f"faang-{uuid.uuid4().hex[:6]}", task_queue=queue)
            await handle.result()
        events = list((await handle.fetch_history()).events)
        n = billable_actions(events)
        print(f"| {'local activities' if local else 'regular activities'} | {len(events)} | {n['total']} | "
              f"{n['workflow, timers, signals, updates, search attributes']} / {n['activities']} / "
              f"{n['local activities']} |")
