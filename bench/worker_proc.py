"""The benchmark's worker in a process of its own, so its RSS and CPU are measured apart from the
benchmark's client (which holds the histories it fetches).

    python -m bench.worker_proc <server address> <task queue> [--model-url URL] [--floor [--tuned]]
        [--no-eager] [--plain-wire] [--profile FILE] [--identity NAME] [--sticky-seconds S]

Serves the benchmark teams (bench/teams.py) with the zero-latency scripted model, or with the
OpenAI-compatible model at `--model-url` (bench/model_server.py). `--floor` serves the floor
workflows instead (bench/baseline.py) on a worker as the SDK and the openai client come;
`--tuned` gives it what our worker adds (the context-free runner, aiohttp's pool, the
garbage collector's settings). `--no-eager` turns off eager activity dispatch (as on a
server without `system.enableActivityEagerExecution`). `--plain-wire` sends model requests
through `chat.completions.create` (the client converts the whole transcript on every call), for
comparison. `--identity` names the worker in workflow histories; `--sticky-seconds` is how long
a conversation's next workflow task waits for this worker (which holds it cached) before any
worker may take it (Temporal's default: 10 s). Prints "ready" once polling; on SIGTERM prints
one JSON line of statistics, stops. Its environment: `BENCH_SLOTS`, `BENCH_TUNER`, `BENCH_CORE_LOG`,
`BENCH_METRICS` (see `set_core_runtime` and `main`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import openai
from temporalio import activity
from temporalio.worker import Worker

from bench.baseline import FloorHTTPWorkflow, FloorWorkflow, NaiveWorkflow, echo
from bench.teams import TEAMS, step
from durable_teams.activities import model as model_module
from durable_teams.activities.model import OpenAIBackend, pooled_http_client
from durable_teams.client.connection import connect
from durable_teams.worker.build import build_worker
from durable_teams.worker.sandbox_runner import ContextFreeSandboxRunner
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.settings import tune_garbage_collector


class ForgetfulScript(ScriptedModel):
    """The scripted model without its record of requests (it would hold every view)."""

    async def complete(self, req, messages, tools):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN201
        response = await super().complete(req, messages, tools)
        self.requests.clear()
        return response


THREAD_PROFILES: list[Any] = []


def profile_thread() -> None:
    """Profile the calling thread (the workflow task executor's one thread)."""
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
    THREAD_PROFILES.append(profile)


def floor_worker(client: Any, task_queue: str, model_url: str | None, eager: bool,
                 identity: str | None, tuned: bool, extra: dict[str, Any]) -> Worker:
    """The floor: bare workflows on a worker as the SDK and the openai client come (`tuned`:
    with the context-free runner and aiohttp's pool; main() adds the GC settings)."""
    model = openai.AsyncOpenAI(base_url=model_url, api_key="not-needed", max_retries=0,
                               http_client=pooled_http_client(model_url) if tuned else None)

    @activity.defn(name="model_http")
    async def model_http(payload: str) -> str:
        assert model_url, "--model-url is needed for the HTTP floor"
        reply = await model.chat.completions.create(
            model="floor", messages=[{"role": "user", "content": payload}])
        return reply.choices[0].message.content or ""

    if tuned:
        extra["workflow_runner"] = ContextFreeSandboxRunner()
    return Worker(client, task_queue=task_queue, workflows=[FloorWorkflow, NaiveWorkflow, FloorHTTPWorkflow],
                  activities=[echo, model_http], max_concurrent_activities=1000,
                  disable_eager_activity_execution=not eager, identity=identity, **extra)


GC_SECONDS = [0.0, 0.0]  # total seconds in the cyclic garbage collector; start of the current run


def time_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        GC_SECONDS[1] = time.perf_counter()
    else:
        GC_SECONDS[0] += time.perf_counter() - GC_SECONDS[1]


def set_core_runtime() -> None:
    """The SDK core's telemetry from the environment: `BENCH_CORE_LOG=DEBUG` (its log at that
    level, on stderr; `BENCH_CORE_LOG_FORWARD=1` through Python's logging instead, much slower),
    `BENCH_METRICS=127.0.0.1:9464` (its Prometheus metrics there: slots used, pollers, cache)."""
    level, metrics = os.environ.get("BENCH_CORE_LOG"), os.environ.get("BENCH_METRICS")
    if not level and not metrics:
        return
    import logging
    import sys

    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        PrometheusConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )
    forwarding = None
    if level:
        # The core writes its log to file descriptor 1; this process's own lines ("ready", the
        # statistics) keep the pipe, the core's go to stderr.
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        if os.environ.get("BENCH_CORE_LOG_FORWARD"):
            core_log = logging.getLogger("temporal_core")
            core_log.addHandler(logging.StreamHandler(sys.stderr))
            core_log.setLevel(level)
            forwarding = LogForwardingConfig(logger=core_log)
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(
        logging=LoggingConfig(filter=TelemetryFilter(core_level=level or "WARN", other_level="WARN"),
                              forwarding=forwarding),
        metrics=PrometheusConfig(bind_address=metrics) if metrics else None)), error_if_already_set=False)


async def main(args: argparse.Namespace) -> None:
    gc.callbacks.append(time_gc)
    set_core_runtime()
    client = await connect(args.address)
    stats: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if args.profile:  # workflow activations run on this thread, profiled apart
        from concurrent.futures import ThreadPoolExecutor
        extra["workflow_task_executor"] = ThreadPoolExecutor(1, initializer=profile_thread)
    if args.floor:
        worker: Any = floor_worker(client, args.task_queue, args.model_url, not args.no_eager,
                                   args.identity, args.tuned, extra)
    else:
        if args.plain_wire:
            def plain(client: Any, params: dict[str, Any], timeout: float) -> Any:
                return client.chat.completions.with_streaming_response.create(**params, timeout=timeout)
            model_module.stream_chat_completion = plain  # type: ignore[assignment]
        backend = OpenAIBackend(base_url=args.model_url) if args.model_url else ForgetfulScript(step)
        if args.identity:
            extra["identity"] = args.identity
        if args.sticky_seconds:
            extra["sticky_queue_schedule_to_start_timeout"] = timedelta(seconds=args.sticky_seconds)
        if os.environ.get("BENCH_SLOTS"):  # workflow-task and local-activity slots (SDK default: 100)
            slots = int(os.environ["BENCH_SLOTS"])
            extra.update(max_concurrent_workflow_tasks=slots, max_concurrent_local_activities=slots)
        if os.environ.get("BENCH_TUNER"):  # slots by the machine's CPU, e.g. 0.8 (build.cpu_tuner)
            from durable_teams.worker.build import cpu_tuner
            extra["tuner"] = cpu_tuner(float(os.environ["BENCH_TUNER"]))
        if args.unsandboxed:
            from temporalio.worker import UnsandboxedWorkflowRunner
            extra["workflow_runner"] = UnsandboxedWorkflowRunner()
        worker = build_worker(client, TEAMS, backend, task_queue=args.task_queue, max_cached_workflows=2000,
                              disable_eager_activity_execution=args.no_eager, **extra)
    profile = None
    if args.profile:
        import cProfile
        profile = cProfile.Profile()
        profile.enable()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with worker:
        if not args.floor or args.tuned:  # as the `durable-teams worker` process does
            tune_garbage_collector()
        print("ready", flush=True)
        await stop.wait()
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)
        for thread_profile in THREAD_PROFILES:
            thread_profile.dump_stats(args.profile + ".workflows")
    if not args.floor and worker.models.view_cache is not None:
        cache = worker.models.view_cache
        stats = {"in_process": cache.live, "queried": cache.hits + cache.misses}
    stats["threads"] = thread_cpu()
    stats["gc_seconds"] = round(GC_SECONDS[0], 2)
    print(json.dumps(stats), flush=True)


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads, summed by thread name (Linux; {} elsewhere):
    Python's ("python": the event loop, workflow activations, tools), the Temporal core's Rust
    runtime ("tokio-rt-worker"), and what threads that have ended used."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for task in Path("/proc/self/task").glob("*") if Path("/proc/self/task").exists() else []:
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = name.rstrip("0123456789_-") or name
        out[name] = round(out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick, 2)
    if out:
        total = sum(os.times()[:2])
        out["threads that ended"] = round(max(0.0, total - sum(out.values())), 2)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("task_queue")
    parser.add_argument("--model-url")
    parser.add_argument("--floor", action="store_true")
    parser.add_argument("--tuned", action="store_true", help="--floor: with the context-free runner and aiohttp")
    parser.add_argument("--no-eager", action="store_true")
    parser.add_argument("--plain-wire", action="store_true")
    parser.add_argument("--unsandboxed", action="store_true")
    parser.add_argument("--profile", help="write a cProfile of the worker's main thread here, and of its "
                        "workflow activations' thread to this name plus .workflows")
    parser.add_argument("--identity", help="the worker's identity (default: pid@host (scripted model))")
    parser.add_argument("--sticky-seconds", type=float, help="the sticky queue's schedule-to-start timeout")
    asyncio.run(main(parser.parse_args()))
    os._exit(0)  # skip interpreter teardown, which the Temporal client's native threads can abort
