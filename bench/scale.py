"""Scale-out benchmark: several worker processes, failover, real model latency, the HTTP path.

    python -m bench.scale workers  [--workers 1 2 4] [--conversations 100]
    python -m bench.scale failover [--conversations 50] [--timeouts 10]
    python -m bench.scale latency  [--concurrency 50 200 500] [--latency 1.0]
    (workers and latency: --tuned-floor gives the floor's worker what our worker adds)
    python -m bench.scale http     [--sizes 25 200 1000] [--plain-sizes 25 200]
    python -m bench.scale calls    [--concurrency 50 200 500] [--latencies 1.0 0]  (bench/calls.py)
    python -m bench.scale actions  (Temporal Cloud actions of a FAANG turn, bench/calls.py)

Every worker runs in a process of its own (bench/worker_proc.py) on a local dev server, and
every figure is printed next to a floor measured in the same run with the same number of worker
processes: a bare workflow running the same activities (bench/baseline.py). The HTTP modes talk
to a scripted OpenAI-compatible server (bench/model_server.py) through the openai client.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from temporalio.client import Client

from bench import calls, procs
from bench.baseline import FloorHTTPWorkflow, FloorWorkflow
from bench.failover import (
    SIDE_EFFECTS,
    busiest,
    expected_answer,
    failover_team,
    pickup_delay,
    read_effects,
)
from bench.run import TEAM
from bench.teams import http_team
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import TeamSpec
from durable_teams.workflows.state import ConversationInput, HumanReply

FLOOR_KINDS = {False: "bare workflows on a worker as temporalio and the openai client come",
               True: "bare workflows on a tuned worker (the context-free runner, aiohttp's pool, "
                     "the garbage collector's settings)"}


def conversation(spec: TeamSpec) -> ConversationInput:
    return ConversationInput(team=spec, task="read", set_search_attributes=False)


async def ours(client: Client, queue: str, spec: TeamSpec, ids: list[str]) -> float:
    """Run conversations to the end; returns the seconds it took."""
    t0 = time.perf_counter()
    await asyncio.gather(*(client.execute_workflow(TeamWorkflow.run, conversation(spec), id=i, task_queue=queue)
                           for i in ids))
    return time.perf_counter() - t0


async def floor(client: Client, queue: str, workflow: type, count: int, calls: int) -> float:
    t0 = time.perf_counter()
    await asyncio.gather(*(client.execute_workflow(workflow.run, calls, id=f"floor-{uuid.uuid4().hex[:8]}",  # type: ignore[attr-defined]
                                                   task_queue=queue) for _ in range(count)))
    return time.perf_counter() - t0


def ids(prefix: str, calls: int, count: int) -> list[str]:
    """Workflow ids that tell the scripted model the conversation's length (bench/teams.py)."""
    return [f"{prefix}-{calls}-{i}x{uuid.uuid4().hex[:6]}" for i in range(count)]


async def workers_mode(client: Client, address: str, counts: list[int], count: int, rounds: int,
                       eager_modes: list[bool], floor_flags: list[str]) -> None:
    calls = 10
    print(f"\n## {count} concurrent conversations of {calls} model calls, W worker processes "
          f"(2 cores: workers, dev server and client share them); {rounds} rounds, ours and the floor "
          "alternating which goes first, both sets of workers started once\n")
    for eager in eager_modes:
        flags = [] if eager else ["--no-eager"]
        print(f"eager activity dispatch {'on (the dev server default)' if eager else 'off (a self-hosted server default)'}:")
        for w in counts:
            await workers_rounds(client, address, w, count, calls, rounds, flags, floor_flags)


async def workers_rounds(client: Client, address: str, w: int, count: int, calls: int, rounds: int,
                         flags: list[str], floor_flags: list[str]) -> None:
    """Throughput of ours and of the floor on W workers each, measured in alternating rounds
    (a noisy shared machine moves both alike); the median of the rounds' ratios."""
    queue = f"scale-{w}-{uuid.uuid4().hex[:4]}"
    ps = [await procs.worker(address, queue, *flags) for _ in range(w)]
    fs = [await procs.worker(address, queue + "-floor", *floor_flags, *flags) for _ in range(w)]
    temporal = procs.temporal_server()
    try:
        await ours(client, queue, TEAM.spec, ids("warm", 3, w))
        await floor(client, queue + "-floor", FloorWorkflow, w, 3)
        ratios, cpu = [], {"ours": [0.0, 0.0], "floor": [0.0, 0.0]}
        for r in range(rounds):
            seconds = {}
            for name in (("ours", "floor") if r % 2 == 0 else ("floor", "ours")):
                group = ps if name == "ours" else fs
                w0, s0 = sum(p.cpu_seconds() for p in group), procs.cpu_of(temporal)
                seconds[name] = (await ours(client, queue, TEAM.spec, ids("tp", calls, count)) if name == "ours"
                                 else await floor(client, queue + "-floor", FloorWorkflow, count, calls))
                cpu[name][0] += sum(p.cpu_seconds() for p in group) - w0
                cpu[name][1] += procs.cpu_of(temporal) - s0
            ratios.append(seconds["floor"] / seconds["ours"])
    finally:
        stats = [await p.stop() for p in ps]
        for p in fs:
            await p.stop()
    local = sum(s.get("in_process", 0) for s in stats)
    queried = sum(s.get("queried", 0) for s in stats)
    n = rounds * count * calls

    def per_call(name: str) -> str:
        return f"worker {cpu[name][0] / n * 1000:.1f} + server {cpu[name][1] / n * 1000:.1f} ms"
    print(f"  {w} worker(s): ratio median {statistics.median(ratios):.2f}x (rounds: "
          f"{' '.join(f'{x:.2f}' for x in ratios)}); CPU per call: ours {per_call('ours')}, floor "
          f"{per_call('floor')}; views read in process {local}/{local + queried}")


async def failover_mode(client: Client, address: str, count: int, seconds: float) -> None:
    print(f"\n## Failover: 2 worker processes, {count} conversations (a tool, then an order that "
          f"needs a person's approval); kill -9 one worker at a random moment; timeouts {seconds:g} s\n")
    folder = Path(tempfile.mkdtemp(prefix="bench-effects-"))
    env = {SIDE_EFFECTS: str(folder)}
    queue = f"failover-{uuid.uuid4().hex[:4]}"
    ps = [await procs.worker(address, queue, "--sticky-seconds", str(seconds), env=env) for _ in range(2)]
    spec = failover_team(model_seconds=seconds, tool_seconds=seconds).spec
    started = time.time()
    handles = [await client.start_workflow(TeamWorkflow.run, conversation(spec), id=i, task_queue=queue)
               for i in ids("fo", 3, count)]
    # a random moment while work is in flight: after a random number of approvals were given
    moment, resume = asyncio.Event(), asyncio.Event()
    approver = asyncio.ensure_future(approve_all(handles, random.randint(1, count - 1), moment, resume))
    await asyncio.wait_for(moment.wait(), 300)
    victim_id, _ = await busiest(handles, [p.identity for p in ps])
    victim, survivor = ps if ps[0].identity == victim_id else ps[::-1]
    victim.kill9()
    killed_at = time.time()
    resume.set()
    print(f"killed worker {victim.identity} {killed_at - started:.1f} s after the first start")
    results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 600)
    finished = time.time()
    approver.cancel()
    await survivor.stop()
    done = sum(r.status == "completed" and r.answer == expected_answer(h.id, True)
               for r, h in zip(results, handles, strict=True))
    applied, attempts = read_effects(folder)
    once = applied == Counter({h.id: 1 for h in handles})
    print(f"{done}/{count} conversations completed with the expected answer; orders applied: "
          f"{sum(applied.values())} ({len(applied)} distinct, each once: {once}); tool attempts "
          f"{len(attempts)} (a retry finds the record and does not apply again)")
    delays = [d for d in [await pickup_delay(h, victim.identity, killed_at) for h in handles] if d is not None]
    if delays:
        print(f"{len(delays)} conversations had work on the killed worker; a survivor picked each up "
              f"within median {statistics.median(delays):.1f} s, max {max(delays):.1f} s of the kill "
              f"(the sticky queue timeout and the model/tool timeouts, {seconds:g} s here; the person's "
              f"query for a question on the dead worker waits out the first)")
    print(f"all finished {finished - killed_at:.1f} s after the kill")


async def approve_all(handles: list, kill_after: int, moment: asyncio.Event,  # noqa: ANN001
                      resume: asyncio.Event) -> None:
    """The person in the loop: approves every order as soon as it is asked (looking at every
    open conversation at once, as an inbox does); after `kill_after` approvals sets `moment`
    and waits for `resume` (the kill) before approving more."""
    answered: set[str] = set()
    while True:
        waiting = [h for h in handles if h.id not in answered]
        found = await asyncio.gather(*(h.query(TeamWorkflow.pending_questions) for h in waiting),
                                     return_exceptions=True)  # a worker may just have died: ask again
        for h, pending in zip(waiting, found, strict=True):
            for q in pending if isinstance(pending, list) else []:
                await h.signal(TeamWorkflow.human_reply, HumanReply(question_id=q.question_id, approved=True))
                answered.add(h.id)
                if len(answered) >= kill_after and not resume.is_set():
                    moment.set()
                    await resume.wait()
        await asyncio.sleep(0.2)


async def latency_mode(client: Client, address: str, concurrency: list[int], latency: float,
                       profile: str | None, rounds: int, floor_flags: list[str]) -> None:
    calls = 10
    print(f"\n## Model latency {latency:.1f} s (+-20 %), one worker process with default options, "
          f"conversations of {calls} model calls (HTTP, openai client)\n")
    server, url = await procs.model_server(latency)
    worker = await procs.worker(address, "lat", "--model-url", url, *(["--profile", profile] if profile else []),
                                *(["--unsandboxed"] if os.environ.get("BENCH_UNSANDBOXED") else []))
    floor_worker = await procs.worker(address, "lat-floor", *floor_flags, "--model-url", url,
                                      *(["--profile", profile + ".floor"] if profile else []))
    temporal = procs.temporal_server()
    spec = http_team(calls).spec
    try:
        await ours(client, "lat", spec, ids("warm", calls, 2))
        await floor(client, "lat-floor", FloorHTTPWorkflow, 2, 2)
        for c in concurrency:
            await latency_rounds(client, worker, floor_worker, temporal, spec, c, calls, rounds, latency)
    finally:
        for name, p in (("ours", worker), ("floor", floor_worker)):
            stats = await p.stop()
            threads = stats.get("threads") or {}
            print(f"{name}: worker CPU seconds by thread over the whole run (warm-up included): "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(threads.items(), key=lambda kv: -kv[1]))
                  + f"; in Python's garbage collector {stats.get('gc_seconds', 0):.1f}")
        server.kill9()


async def latency_rounds(client: Client, worker: procs.Proc, floor_worker: procs.Proc, temporal: object,
                         spec: TeamSpec, c: int, calls: int, rounds: int, latency: float) -> None:
    """`rounds` runs of ours and of the floor at `c` conversations, alternating which goes first;
    the median of the rounds' ratios, and CPU per call over all rounds."""
    n = c * calls
    rates: dict[str, list[float]] = {"ours": [], "floor": []}
    cpu = {"ours": [0.0, 0.0], "floor": [0.0, 0.0]}
    for r in range(rounds):
        for name in (("ours", "floor") if r % 2 == 0 else ("floor", "ours")):
            proc = worker if name == "ours" else floor_worker
            w0, s0 = proc.cpu_seconds(), procs.cpu_of(temporal)  # type: ignore[arg-type]
            seconds = (await ours(client, "lat", spec, ids("lat", calls, c)) if name == "ours"
                       else await floor(client, "lat-floor", FloorHTTPWorkflow, c, calls))
            cpu[name][0] += proc.cpu_seconds() - w0
            cpu[name][1] += procs.cpu_of(temporal) - s0  # type: ignore[arg-type]
            rates[name].append(n / seconds)
    ratios = [o / f for o, f in zip(rates["ours"], rates["floor"], strict=True)]
    total = n * rounds
    print(f"{c:>4} concurrent: ours {statistics.median(rates['ours']):6.1f} calls/s, floor "
          f"{statistics.median(rates['floor']):6.1f} calls/s (medians), ratio median {statistics.median(ratios):.2f}x "
          f"(rounds: {' '.join(f'{x:.2f}' for x in ratios)}; ideal {c / latency:.0f}/s); per model call: worker CPU "
          f"{cpu['ours'][0] / total * 1000:.1f} ms (floor {cpu['floor'][0] / total * 1000:.1f}), Temporal server CPU "
          f"{cpu['ours'][1] / total * 1000:.1f} ms (floor {cpu['floor'][1] / total * 1000:.1f})")


async def http_mode(client: Client, address: str, sizes: list[int], plain_sizes: list[int],
                    profile: str | None = None) -> None:
    print("\n## Per-call worker CPU against N, through the openai client and a zero-latency HTTP model\n")
    server, url = await procs.model_server(0.0, 0.0)
    try:
        for plain, wanted in ((False, sizes), (True, plain_sizes)):
            if not wanted:
                continue
            flags = ["--model-url", url] + (["--plain-wire"] if plain else [])
            if profile and not plain:
                flags += ["--profile", profile]
            worker = await procs.worker(address, "http", *flags)
            await ours(client, "http", http_team(3).spec, ids("warm", 3, 1))
            label = "chat.completions.create (the client converts every message)" if plain else "ours (each message encoded once)"
            print(f"{label}:")
            for n in wanted:
                t0 = time.perf_counter()
                avg, last = await one_long(client, worker, url, n)
                step = (time.perf_counter() - t0) / n * 1000
                print(f"  N={n:>5}: {step:.0f} ms per step (wall), worker CPU {avg:.1f} ms per model call "
                      f"on average, {last:.1f} ms per call over the last fifth")
            await worker.stop()
        if sizes:  # the same sizes, in the same order, for bare workflows making the same calls
            floor_worker = await procs.worker(address, "http-floor", "--floor", "--model-url", url)
            await floor(client, "http-floor", FloorHTTPWorkflow, 1, 3)
            print("floor (bare workflow, the same model and tool calls through the openai client):")
            for n in sizes:
                seconds = await floor(client, "http-floor", FloorHTTPWorkflow, 1, n)
                print(f"  N={n:>5}: {seconds / n * 1000:.0f} ms per step (wall)")
            await floor_worker.stop()
    finally:
        server.kill9()


async def one_long(client: Client, worker: procs.Proc, url: str, n: int) -> tuple[float, float]:
    """One conversation of N model calls; worker CPU per call over all of it and its last 20 %."""
    start_count, cpu0 = await procs.model_requests(url), worker.cpu_seconds()
    task = asyncio.ensure_future(ours(client, "http", http_team(n).spec, ids("long", n, 1)))
    mark: tuple[int, float] | None = None
    while not task.done():
        await asyncio.sleep(0.1)
        done = await procs.model_requests(url) - start_count
        if mark is None and done >= n * 0.8:
            mark = (done, worker.cpu_seconds())
    await task
    cpu = worker.cpu_seconds()
    done = await procs.model_requests(url) - start_count
    avg = (cpu - cpu0) / n * 1000
    if mark is None or done == mark[0]:
        return avg, avg
    return avg, (cpu - mark[1]) / (done - mark[0]) * 1000


async def main(args: argparse.Namespace) -> None:
    async with await procs.dev_server() as env:
        address = env.client.service_client.config.target_host
        floor_flags = ["--floor"] + (["--tuned"] if args.tuned_floor else [])
        print(f"floor: {FLOOR_KINDS[args.tuned_floor]}")
        if args.mode == "workers":
            eager = {"on": [True], "off": [False], "both": [True, False]}[args.eager]
            await workers_mode(env.client, address, args.workers, args.conversations or 100, args.rounds or 5,
                               eager, floor_flags)
        elif args.mode == "failover":
            await failover_mode(env.client, address, args.conversations or 50, args.timeouts)
        elif args.mode == "calls":
            await calls.calls_mode(env.client, address, args.concurrency, args.latencies, args.rounds or 1,
                                   args.only, args.processes)
        elif args.mode == "actions":
            await calls.actions_mode(env.client)
        elif args.mode == "latency":
            await latency_mode(env.client, address, args.concurrency, args.latency, args.profile,
                               args.rounds or 1, floor_flags)
        else:
            await http_mode(env.client, address, args.sizes, args.plain_sizes, args.profile)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["workers", "failover", "latency", "http", "calls", "actions"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None,
                        help="workers (default 5), latency (default 1): alternating rounds of ours and the floor")
    parser.add_argument("--eager", choices=["on", "off", "both"], default="both",
                        help="workers: eager activity dispatch on, off, or a run of each")
    parser.add_argument("--tuned-floor", action="store_true",
                        help="workers, latency: the floor's worker with what our worker adds (the "
                        "context-free runner, aiohttp's pool, the garbage collector's settings), "
                        "not as the SDK comes")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--latencies", type=float, nargs="+", default=[1.0, 0.0], help="calls: model latencies (s)")
    parser.add_argument("--processes", type=int, default=1,
                        help="calls: worker processes for ours and as many for the floor")
    parser.add_argument("--only", nargs="+", default=None, metavar="WORD",
                        help="calls: only the contenders whose name contains one of these words (e.g. floor local)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 200, 1000])
    parser.add_argument("--plain-sizes", type=int, nargs="*", default=[25, 200])
    parser.add_argument("--profile", help="latency, http: write a cProfile of (our) worker process here")
    parser.add_argument("--timeouts", type=float, default=10.0,
                        help="failover: the sticky queue's, a model call's and a tool's timeouts (s)")
    asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, which the Temporal client's native threads can abort
