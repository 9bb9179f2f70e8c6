"""One langgraph-sdk client against two servers: LangGraph's own (`langgraph dev` serving
langgraph-supervisor's FAANG graph, bench/langgraph_faang/) and durable-teams' LangGraph door
(the gateway serving the FAANG team), both on the same scripted model (bench/faang_model.py).

    python -m bench.langgraph_side_by_side --langgraph-bin PATH/TO/langgraph [--runs 1,10,50]

Prints three Markdown tables (docs/langgraph-server.md holds them):
1. each SDK call on both servers: its outcome, the same or not;
2. kill -9 of each server in the middle of a run, then a restart: what each keeps;
3. runs per second and latency per run at 1, 10 and 50 concurrent threads.

`langgraph dev` needs `pip install "langgraph-cli[inmem]" langgraph-supervisor langchain-openai`
in an environment of its own (its path: --langgraph-bin); durable-teams' side needs the
gateway extra and langgraph-sdk (the test extra has both).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "what's the combined headcount of the FAANG companies in 2024?"
ANSWER = "1,977,586"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} ended with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer in {seconds} s")


@dataclass
class Server:
    """One side: how to start all its processes (the first serves HTTP), how to start again the
    ones a crash kills (every one of them: the HTTP server, and durable-teams' worker too), its
    SDK URL, its health URL, and what stops what outlives its processes."""

    name: str
    start: Callable[[], list[subprocess.Popen[bytes]]]
    url: str
    health: str
    finish: Callable[[], None] = lambda: None
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def up(self) -> None:
        self.procs = self.start()
        wait_http(self.health, self.procs[0])

    def crash_and_restart(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        self.up()

    def down(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.kill()
        self.finish()


def spawn(argv: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=env, cwd=cwd, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def langgraph_server(lg_bin: str, model_url: str, work: Path) -> Server:
    port = free_port()
    graph_dir = work / "langgraph_faang"
    shutil.copytree(ROOT / "bench" / "langgraph_faang", graph_dir, dirs_exist_ok=True)
    env = dict(os.environ, OPENAI_BASE_URL=model_url, LANGGRAPH_NO_BROWSER="1",
               LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")

    def start_dev() -> subprocess.Popen[bytes]:
        return spawn([lg_bin, "dev", "--port", str(port), "--no-browser", "--no-reload"], env,
                     work / "langgraph.log", cwd=graph_dir)

    return Server("langgraph dev", lambda: [start_dev()], f"http://127.0.0.1:{port}",
                  f"http://127.0.0.1:{port}/ok")


def durable_teams_server(model_url: str, work: Path) -> Server:
    temporal_port, gateway_port = free_port(), free_port()
    env = dict(os.environ, OPENAI_BASE_URL=model_url, OPENAI_API_KEY="unused",
               DURABLE_TEAMS_MODEL="faang-script", DURABLE_TEAMS_PORT=str(temporal_port),
               DURABLE_TEAMS_UI_PORT=str(free_port()), HOME=str(work / "home"))
    (work / "home").mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "durable_teams"]

    def start() -> list[subprocess.Popen[bytes]]:
        # the worker starts the embedded Temporal server (detached: it outlives a crash of the
        # worker, as a cluster would), then the gateway
        worker = spawn(cli + ["worker"], env, work / "worker.log")
        wait_temporal(temporal_port, worker)
        return [spawn(cli + ["serve", "--port", str(gateway_port)], env, work / "gateway.log"), worker]

    def finish() -> None:
        subprocess.run(cli + ["server-stop"], env=env, capture_output=True, timeout=60)

    return Server("durable-teams", start, f"http://127.0.0.1:{gateway_port}/langgraph",
                  f"http://127.0.0.1:{gateway_port}/healthz", finish)


def wait_temporal(port: int, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the worker ended before the embedded server was up")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError("the embedded Temporal server did not start")


def last_text(state: Any) -> str:
    values = state.get("values", state) if isinstance(state, dict) else {}
    messages = values.get("messages", []) if isinstance(values, dict) else []
    return str(messages[-1].get("content", "")) if messages else ""


async def attempt(call: Awaitable[Any]) -> tuple[str, Any]:
    try:
        return "ok", await call
    except Exception as err:  # noqa: BLE001 - the table shows what each server answered
        status = getattr(getattr(err, "response", None), "status_code", None)
        return f"error {status or type(err).__name__}", None


async def sdk_calls(url: str) -> dict[str, str]:
    """Each call of the SDK a LangGraph user makes, and what came back (a short outcome)."""
    client = get_client(url=url)
    out: dict[str, str] = {}
    inp = {"messages": [{"role": "user", "content": QUESTION}]}
    status, found = await attempt(client.assistants.search(graph_id="faang"))
    out["assistants.search(graph_id)"] = f"{status}: {len(found or [])} assistant(s)"
    status, _ = await attempt(client.threads.create())
    out["threads.create()"] = status
    status, thread = await attempt(client.threads.create(graph_id="faang"))
    out["threads.create(graph_id)"] = status
    if thread is None:
        return out
    tid = thread["thread_id"]
    status, final = await attempt(client.runs.wait(tid, "faang", input=inp))
    out["runs.wait"] = f"{status}: {'answer' if ANSWER in last_text(final or {}) else 'no answer'}"
    for mode in ("values", "updates", "messages-tuple", "events", "debug"):
        events: list[str] = []

        async def read(mode: str = mode, events: list[str] = events) -> None:
            new = await client.threads.create(graph_id="faang")
            async for part in client.runs.stream(new["thread_id"], "faang", input=inp, stream_mode=mode):
                events.append(part.event)

        status, _ = await attempt(read())
        kinds = sorted(set(events) - {"metadata"})
        out[f"runs.stream({mode})"] = f"{status}: {len(events)} events {', '.join(kinds)[:60]}"
    status, state = await attempt(client.threads.get_state(tid))
    out["threads.get_state"] = f"{status}: {'answer' if ANSWER in last_text(state or {}) else 'no answer'}"
    status, history = await attempt(client.threads.get_history(tid, limit=100))
    out["threads.get_history"] = f"{status}: {len(history or [])} checkpoint(s)"
    status, copy = await attempt(client.threads.copy(tid))
    if copy:
        _, copied = await attempt(client.threads.get_state(copy["thread_id"]))
        status += ": same messages" if last_text(copied or {}) == last_text(state or {}) else ": differs"
    out["threads.copy"] = status
    status, run = await attempt(client.runs.create(tid, "faang", input=inp))
    out["runs.create (background)"] = status
    if run:
        status, joined = await attempt(client.runs.join(tid, run["run_id"]))
        out["runs.join"] = f"{status}: {'answer' if ANSWER in last_text(joined or {}) else 'no answer'}"
    status, runs = await attempt(client.runs.list(tid))
    out["runs.list"] = f"{status}: {len(runs or [])} run(s)"
    status, found_threads = await attempt(client.threads.search(limit=100))
    out["threads.search"] = f"{status}: {'found' if any(t['thread_id'] == tid for t in found_threads or []) else 'missing'}"
    status, _ = await attempt(client.threads.delete(tid))
    status2, _ = await attempt(client.threads.get(tid))
    out["threads.delete, then get"] = f"{status}, then {status2}"
    return out


async def crash_and_restart(server: Server) -> dict[str, str]:
    """A background run, the server's processes killed (-9) once the run has begun (LangGraph's
    server; durable-teams' gateway and worker), restarted: what is kept."""
    client = get_client(url=server.url)
    thread = await client.threads.create(graph_id="faang")
    tid = thread["thread_id"]
    inp = {"messages": [{"role": "user", "content": QUESTION}]}
    run = await client.runs.create(tid, "faang", input=inp)
    await asyncio.sleep(1.5)  # the model answers after 1 s: the run is under way (ten calls)
    out: dict[str, str] = {}
    status, _ = await attempt(client.runs.create(tid, "faang", input=inp, multitask_strategy="reject"))
    out["multitask_strategy=reject while the run is under way"] = status
    server.crash_and_restart()
    client = get_client(url=server.url)
    status, got = await attempt(client.threads.get(tid))
    out["the thread"] = "kept" if got else f"lost ({status})"
    status, joined = await attempt(asyncio.wait_for(client.runs.join(tid, run["run_id"]), 120))
    out["the run"] = ("finished with the answer" if ANSWER in last_text(joined or {})
                      else f"not finished ({status})")
    return out


async def throughput(url: str, concurrent: int, runs_each: int = 1) -> tuple[float, float, float]:
    """Runs per second, median and p95 seconds per run, `concurrent` threads at once."""
    client = get_client(url=url)
    inp = {"messages": [{"role": "user", "content": QUESTION}]}
    latencies: list[float] = []

    async def one() -> None:
        thread = await client.threads.create(graph_id="faang")
        for _ in range(runs_each):
            began = time.perf_counter()
            await client.runs.wait(thread["thread_id"], "faang", input=inp)
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(concurrent)))
    wall = time.perf_counter() - began
    latencies.sort()
    return len(latencies) / wall, statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))]


@contextlib.contextmanager
def model_server(latency: float) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "bench.model_server", "--latency", str(latency),
                             "--jitter", "0"], cwd=ROOT, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait()


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph-bin", required=True, help="the `langgraph` CLI of an env with langgraph-cli[inmem]")
    parser.add_argument("--runs", default="1,10,50", help="concurrent threads for the benchmark")
    parser.add_argument("--skip-crash", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with model_server(0.0) as model_url:
            servers = [langgraph_server(args.langgraph_bin, model_url, work / "lg"),
                       durable_teams_server(model_url, work / "dt")]
            calls: dict[str, dict[str, str]] = {}
            bench: dict[str, dict[int, tuple[float, float, float]]] = {}
            for server in servers:
                server.up()
                try:
                    calls[server.name] = await sdk_calls(server.url)
                    bench[server.name] = {n: await throughput(server.url, n) for n in map(int, args.runs.split(","))}
                finally:
                    server.down()
        names = list(calls)
        keys = list(dict.fromkeys(k for c in calls.values() for k in c))
        rows = [[k, *(calls[n].get(k, "-") for n in names),
                 "same" if len({calls[n].get(k, "-").split(":")[0] for n in names}) == 1 else "differs"]
                for k in keys]
        print(table(["SDK call", *names, ""], rows))
        print()
        rows = [[f"{n} threads", *(f"{bench[s][n][0]:.1f} runs/s, median {bench[s][n][1]:.2f} s, p95 {bench[s][n][2]:.2f} s"
                                   for s in names)] for n in map(int, args.runs.split(","))]
        print(table(["concurrency", *names], rows))
        if not args.skip_crash:
            crashes: dict[str, dict[str, str]] = {}
            with model_server(1.0) as model_url:
                for server in [langgraph_server(args.langgraph_bin, model_url, work / "lg2"),
                               durable_teams_server(model_url, work / "dt2")]:
                    server.up()
                    try:
                        crashes[server.name] = await crash_and_restart(server)
                    finally:
                        server.down()
            print()
            keys = list(dict.fromkeys(k for c in crashes.values() for k in c))
            print(table(["a run under way; kill -9 and a restart", *crashes], [[k, *(crashes[n].get(k, "-") for n in crashes)] for k in keys]))


if __name__ == "__main__":
    asyncio.run(main())
