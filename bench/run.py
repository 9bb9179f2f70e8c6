"""Benchmark: history growth, per-step overhead and throughput against Temporal's floor.

    python -m bench.run [--quick] [--long] [--plot docs/history.png]

Runs on a local Temporal dev server (in memory) with a zero-latency scripted model. Every figure
is printed next to a baseline measured in the same run:
- floor: a bare workflow running the same activities with the same payload sizes;
- naive: the shape every peer uses, the whole transcript as each model call's input.

The parked conversations and `--long` (one conversation of 1,000 model calls) run on a worker in
a process of its own (`bench.worker_proc`), so its RSS and CPU are the worker's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
import uuid
from pathlib import Path

import psutil
from temporalio.client import Client
from temporalio.worker import Worker

from bench import procs
from bench.baseline import BLOB, FloorWorkflow, NaiveWorkflow, echo
from durable_teams.activities.view_cache import ViewCache
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Budgets, Message
from durable_teams.workflows.state import ConversationInput, HumanReply


def fetch(i: int) -> str:
    """Return a 2 KB document."""
    return (f"doc {i}: " + "x" * BLOB)[:BLOB]


def script(n: int):  # noqa: ANN201
    def step(req, messages, tools):  # noqa: ANN001, ANN202
        if req.agent_call_index < n - 1:
            return call("fetch", i=req.agent_call_index)
        return say("done")
    return step


TEAM = Swarm([Agent("reader", "Read documents.", tools=[fetch], model="scripted")],
             budgets=Budgets(max_model_calls=5000, max_tool_calls=5000)).compile()
PARK_TEAM = Swarm([Agent("asker", "Ask.", tools=["ask_human"], model="scripted")]).compile()


# ---- measurements ------------------------------------------------------------------------------

async def history_stats(client: Client, workflow_id: str) -> tuple[int, int, int]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events), len(history.to_json()), sum(e.ByteSize() for e in history.events)


async def run_ours(client: Client, tq: str, n: int) -> tuple[str, float, int]:
    wid = f"ours-{n}-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False),
        id=wid, task_queue=tq)
    await handle.result()
    elapsed = time.perf_counter() - started
    transcript = await handle.query(TeamWorkflow.transcript, True)
    distinct = sum(len(m.model_dump_json()) for m in transcript)
    return wid, elapsed, distinct


async def run_plain(client: Client, tq: str, wf: type, n: int) -> tuple[str, float]:
    wid = f"{wf.__name__}-{n}-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    await client.execute_workflow(wf.run, n, id=wid, task_queue=tq)  # type: ignore[attr-defined]
    return wid, time.perf_counter() - started


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    """`bench.worker_proc` in a subprocess, polling `task_queue` on the dev server."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.args = [sys.executable, "-m", "bench.worker_proc",
                     client.service_client.config.target_host, task_queue]

    async def __aenter__(self) -> WorkerProcess:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, cwd=ROOT)
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the worker process did not start (it said {line!r})")
        self.ps = psutil.Process(self.proc.pid)
        self.drained = procs.drain(self.proc.stdout)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.proc.terminate()
        await self.proc.wait()
        await self.drained

    def rss_mb(self) -> float:
        return self.ps.memory_info().rss / 2**20

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return times.user + times.system


async def main(quick: bool, plot: str | None, long: int | None) -> None:
    sizes = [25, 50, 100] if quick else [25, 50, 100, 200, 400]
    parked = 100 if quick else 1000
    async with await procs.dev_server() as env:
        client = env.client
        tq = "bench"
        SIZES: dict[str, int] = {}

        def step(req, messages, tools):  # noqa: ANN001, ANN202
            if req.agent == "asker":
                return call("ask_human", question="Go ahead?") if req.agent_call_index == 0 else say("thanks")
            return script(SIZES[req.workflow_id])(req, messages, tools)

        backend = ScriptedModel(step)
        ours_worker = build_worker(client, [TEAM, PARK_TEAM], backend, task_queue=tq,
                                   max_cached_workflows=2000)
        # The same, but every model call reads its view with the query: what a worker that
        # does not hold the conversation's workflow does (several workers on several machines).
        query_worker = build_worker(client, [TEAM], backend, task_queue=tq + "-query",
                                    max_cached_workflows=2000,
                                    view_reader=ViewCache(live=False).read)
        base_worker = Worker(client, task_queue=tq + "-base", workflows=[FloorWorkflow, NaiveWorkflow],
                             activities=[echo], max_concurrent_activities=200)
        async with ours_worker, query_worker, base_worker:
            # warm up both paths
            SIZES["ours-warm"] = 5
            await client.execute_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="w", set_search_attributes=False), id="ours-warm", task_queue=tq)
            await run_plain(client, tq + "-base", FloorWorkflow, 5)

            print("\n## History growth (one conversation, N model calls, ~2 KB new content per call)\n")
            print(f"{'N':>5} {'shape':>6} {'events':>7} {'history_json':>13} {'history_proto':>14} {'distinct_msg_bytes':>19} {'proto/distinct':>15}")
            rows = []
            for n in sizes:
                wid = f"ours-{n}-{uuid.uuid4().hex[:6]}"
                SIZES[wid] = n
                handle = await client.start_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False), id=wid, task_queue=tq)
                await handle.result()
                transcript = await handle.query(TeamWorkflow.transcript, True)
                distinct = sum(len(m.model_dump_json()) for m in transcript)
                events, hjson, hproto = await history_stats(client, wid)
                rows.append(("ours", n, events, hjson, hproto, distinct))
                print(f"{n:>5} {'ours':>6} {events:>7} {hjson:>13,} {hproto:>14,} {distinct:>19,} {hproto / distinct:>15.2f}")
                if n <= 200:
                    nid, _ = await run_plain(client, tq + "-base", NaiveWorkflow, n)
                    events, hjson, hproto = await history_stats(client, nid)
                    rows.append(("naive", n, events, hjson, hproto, distinct))
                    print(f"{n:>5} {'naive':>6} {events:>7} {hjson:>13,} {hproto:>14,} {distinct:>19,} {hproto / distinct:>15.2f}")

            print("\n## Per-step overhead against the floor (same activities, same payload sizes)\n")
            n = 50
            ours_t, floor_t = [], []
            for _ in range(3):
                wid = f"ours-step-{uuid.uuid4().hex[:6]}"
                SIZES[wid] = n
                t0 = time.perf_counter()
                await client.execute_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False), id=wid, task_queue=tq)
                ours_t.append(time.perf_counter() - t0)
                _, ft = await run_plain(client, tq + "-base", FloorWorkflow, n)
                floor_t.append(ft)
            o, f = min(ours_t) / n * 1000, min(floor_t) / n * 1000
            print(f"N={n}: ours {o:.1f} ms/step, floor {f:.1f} ms/step, ratio {o / f:.2f}x (best of 3)")

            print("\n## Throughput (model calls per second; conversations of 10 calls)\n")
            for conc in (1, 10, 100):
                ids = [f"tp-{conc}-{i}-{uuid.uuid4().hex[:4]}" for i in range(conc)]
                for wid in ids:
                    SIZES[wid] = 10
                t0 = time.perf_counter()
                await asyncio.gather(*(client.execute_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False), id=wid, task_queue=tq) for wid in ids))
                ours_rate = conc * 10 / (time.perf_counter() - t0)
                t0 = time.perf_counter()
                await asyncio.gather(*(run_plain(client, tq + "-base", FloorWorkflow, 10) for _ in range(conc)))
                floor_rate = conc * 10 / (time.perf_counter() - t0)
                qids = [f"{wid}-q" for wid in ids]
                for wid in qids:
                    SIZES[wid] = 10
                t0 = time.perf_counter()
                await asyncio.gather(*(client.execute_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False), id=wid, task_queue=tq + "-query") for wid in qids))
                query_rate = conc * 10 / (time.perf_counter() - t0)
                print(f"{conc:>4} concurrent: ours {ours_rate:7.1f}/s, floor {floor_rate:7.1f}/s, ratio "
                      f"{ours_rate / floor_rate:.2f}x; every view by query {query_rate:7.1f}/s, "
                      f"{query_rate / floor_rate:.2f}x")

        print(f"\n## {parked} conversations parked on ask_human (worker in its own process)\n")
        async with WorkerProcess(client, tq + "-proc") as worker:
            warm = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=PARK_TEAM.spec, task="ask me"),
                id=f"park-warm-{uuid.uuid4().hex[:4]}", task_queue=tq + "-proc")
            await wait_all_pending([warm])
            await warm.signal(TeamWorkflow.human_reply, HumanReply(question_id="q1", text="yes"))
            await warm.result()
            rss_before = worker.rss_mb()
            handles = []
            for i in range(parked):
                handles.append(await client.start_workflow(
                    TeamWorkflow.run, ConversationInput(team=PARK_TEAM.spec, task="ask me"),
                    id=f"park-{i}-{uuid.uuid4().hex[:4]}", task_queue=tq + "-proc"))
            await wait_all_pending(handles)
            cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
            await asyncio.sleep(10)  # measuring idle cost: nothing to await but time itself
            idle_cpu = (worker.cpu_seconds() - cpu0) / (time.perf_counter() - t0)
            print(f"worker RSS: {worker.rss_mb():.0f} MB with {parked} parked (after one warm-up "
                  f"conversation: {rss_before:.0f} MB); worker CPU while waiting: "
                  f"{idle_cpu * 100:.2f}% of one core over 10 s (psutil counts 10 ms ticks); benchmark process RSS {rss_mb():.0f} MB")
            t0 = time.perf_counter()
            await asyncio.gather(*(h.signal(TeamWorkflow.human_reply, HumanReply(question_id="q1", text="yes")) for h in handles))
            results = await asyncio.gather(*(h.result() for h in handles))
            done = sum(1 for r in results if r.status == "completed")
            print(f"answered all; {done}/{parked} finished in {time.perf_counter() - t0:.1f} s; "
                  f"worker RSS after: {worker.rss_mb():.0f} MB")

            if long:
                await run_long(client, tq + "-proc", worker, long)
    if plot:
        draw(rows, plot)


async def run_long(client: Client, tq: str, worker: WorkerProcess, n: int) -> None:
    print(f"\n## One conversation of {n:,} model calls (worker in its own process)\n")
    wid = f"long-{n}-{uuid.uuid4().hex[:6]}"
    rss0, cpu0, t0 = worker.rss_mb(), worker.cpu_seconds(), time.perf_counter()
    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="read", set_search_attributes=False),
        id=wid, task_queue=tq)
    result = await handle.result()
    elapsed, cpu = time.perf_counter() - t0, worker.cpu_seconds() - cpu0
    log = await read_log(handle)
    distinct = sum(len(m.model_dump_json()) for m in log)
    events, hjson, hproto = await history_stats(client, wid)
    runs = getattr(result, "runs", 1)
    print(f"status {result.status}, {result.model_calls:,} model calls, workflow runs: {runs} "
          f"({'no continue-as-new' if runs == 1 else 'continued as new'})")
    print(f"history: {events:,} events, {hproto:,} proto bytes ({hjson:,} json); distinct message "
          f"bytes {distinct:,}; proto/distinct {hproto / distinct:.2f}")
    print(f"wall {elapsed:.1f} s ({elapsed / n * 1000:.0f} ms per model call); worker CPU "
          f"{cpu:.1f} s ({cpu / n * 1000:.1f} ms per model call); worker RSS {rss0:.0f} -> "
          f"{worker.rss_mb():.0f} MB")


async def read_log(handle, page: int = 200) -> list[Message]:  # noqa: ANN001
    """The whole log, a page at a time: one query result is capped at 2 MB by the server, which
    a long conversation's full transcript exceeds."""
    log: list[Message] = []
    shared = 0
    while True:
        upto = len(log) + page
        delta = await handle.query(TeamWorkflow.model_view_delta, args=["reader", 0, upto, len(log), shared, False])
        log += delta.messages
        shared += len(delta.shared)
        if len(log) < upto:
            return log


async def wait_all_pending(handles: list) -> None:  # noqa: ANN001
    for h in handles:
        for _ in range(2000):
            if await h.query(TeamWorkflow.pending_questions):
                break
            await asyncio.sleep(0.05)


def draw(rows: list, path: str) -> None:  # noqa: ANN001
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: pip install -e '.[bench]' for the plot)")
        return
    for shape in ("ours", "naive"):
        pts = [(n, proto) for s, n, _, _, proto, _ in rows if s == shape]
        plt.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], marker="o", label=shape)
    plt.axhline(50, color="red", linestyle="--", label="Temporal's 50 MB limit")
    plt.xlabel("model calls in one conversation")
    plt.ylabel("history size (MB, proto)")
    plt.legend()
    plt.savefig(path, dpi=100)
    print(f"plot: {path}")
    json.dump(rows, open(Path(path).with_suffix(".json"), "w"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--plot", default=None)
    parser.add_argument("--long", type=int, nargs="?", const=1000, default=None,
                        help="also run one conversation of this many model calls (default 1000)")
    args = parser.parse_args()
    asyncio.run(main(args.quick, args.plot, args.long))
