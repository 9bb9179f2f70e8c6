"""The benchmark's worker in a process of its own, so its RSS and CPU are measured apart from the
benchmark's client (which holds the histories it fetches).

    python -m bench.worker_proc <server address> <task queue> [--model-url URL] [--floor]
        [--no-eager] [--plain-wire] [--profile FILE] [--identity NAME] [--sticky-seconds S]

Serves the benchmark teams (bench/teams.py) with the zero-latency scripted model, or with the
OpenAI-compatible model at `--model-url` (bench/model_server.py). `--floor` serves the floor
workflows instead (bench/baseline.py). `--no-eager` turns off eager activity dispatch (as on a
server without `system.enableActivityEagerExecution`). `--plain-wire` sends model requests
through `chat.completions.create` (the client converts the whole transcript on every call), for
comparison. `--identity` names the worker in workflow histories; `--sticky-seconds` is how long
a conversation's next workflow task waits for this worker (which holds it cached) before any
worker may take it (Temporal's default: 10 s). Prints "ready" once polling; on SIGTERM prints
one JSON line of statistics, stops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.worker import Worker

from bench.baseline import FloorHTTPWorkflow, FloorWorkflow, NaiveWorkflow, echo
from bench.teams import TEAMS, step
from durable_teams.activities import model as model_module
from durable_teams.activities.model import OpenAIBackend
from durable_teams.runtime import build_worker, connect
from durable_teams.scripted import ScriptedModel


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
                 identity: str | None, extra: dict[str, Any]) -> Worker:
    backend = OpenAIBackend(base_url=model_url) if model_url else None

    @activity.defn(name="model_http")
    async def model_http(payload: str) -> str:
        assert backend is not None, "--model-url is needed for the HTTP floor"
        reply = await backend.client.chat.completions.create(
            model="floor", messages=[{"role": "user", "content": payload}])
        return reply.choices[0].message.content or ""

    return Worker(client, task_queue=task_queue, workflows=[FloorWorkflow, NaiveWorkflow, FloorHTTPWorkflow],
                  activities=[echo, model_http], max_concurrent_activities=1000,
                  disable_eager_activity_execution=not eager, identity=identity, **extra)


async def main(args: argparse.Namespace) -> None:
    client = await connect(args.address)
    stats: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if args.profile:  # workflow activations run on this thread, profiled apart
        from concurrent.futures import ThreadPoolExecutor
        extra["workflow_task_executor"] = ThreadPoolExecutor(1, initializer=profile_thread)
    if args.floor:
        worker: Any = floor_worker(client, args.task_queue, args.model_url, not args.no_eager,
                                   args.identity, extra)
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
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("task_queue")
    parser.add_argument("--model-url")
    parser.add_argument("--floor", action="store_true")
    parser.add_argument("--no-eager", action="store_true")
    parser.add_argument("--plain-wire", action="store_true")
    parser.add_argument("--unsandboxed", action="store_true")
    parser.add_argument("--profile", help="write a cProfile of the worker's main thread here, and of its "
                        "workflow activations' thread to this name plus .workflows")
    parser.add_argument("--identity", help="the worker's identity (default: pid@host (scripted model))")
    parser.add_argument("--sticky-seconds", type=float, help="the sticky queue's schedule-to-start timeout")
    asyncio.run(main(parser.parse_args()))
    os._exit(0)  # skip interpreter teardown, which the Temporal client's native threads can abort
