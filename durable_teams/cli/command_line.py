"""`durable-teams`: run the demo, start teams, read conversations, answer questions.

    durable-teams demo [faang|support]         # a demo team on the embedded server
    durable-teams server-start [--codec-server]  # the embedded Temporal server (and Web UI)
    durable-teams worker                       # a worker (same as python worker.py)
    durable-teams worker --team myteams:TEAMS [--examples] [--script myscript.json] [--task-queue mine]
    durable-teams chat acme [--thread ID]      # talk to a team, turn by turn
    durable-teams run faang "what's the combined headcount of the FAANG companies in 2024?"
    id=$(durable-teams run faang "..." --no-wait)   # --no-wait prints only the workflow id
    durable-teams status <workflow-id>
    durable-teams transcript <workflow-id> [--full]
    durable-teams follow <workflow-id>         # every step as it happens, until it ends
    durable-teams pending                      # every question waiting for a person
    durable-teams answer <workflow-id> "text" [--question q2]
    durable-teams approve|deny <workflow-id> [--question q2] [--reason "..."]
    durable-teams checkpoints <workflow-id>    # the steps it passed, each with a checkpoint id
    durable-teams fork <workflow-id> [--at <checkpoint>] [--message "..."]   # a new conversation from one
    durable-teams rewind <workflow-id> --to <checkpoint>   # the same conversation goes on from one
    durable-teams server-stop
    durable-teams codec-server [--port 8081]   # decrypts payloads for the Web UI / temporal CLI
    durable-teams graph faang [--team myteams:TEAMS]   # a team as a Mermaid diagram
    durable-teams serve [--port 8000]          # HTTP gateway: web inbox, OpenAI APIs, MCP, A2A
    durable-teams mcp [--team myteams:TEAMS]   # the teams as MCP tools over stdio
    durable-teams memory list|get|put|delete   # the memory store tools share (memory --help)
    durable-teams replay ID|FILE --team cand:TEAMS  # recorded conversations against a candidate (replay --help)

Only `demo`, `worker` and `server-start` start the embedded Temporal server (gRPC port
$DURABLE_TEAMS_PORT or --port, default 7233; Web UI $DURABLE_TEAMS_UI_PORT or --ui-port,
default gRPC port + 1000; database $DURABLE_TEAMS_DB). The other commands use $TEMPORAL_ADDRESS,
else that embedded server, and say so at once when there is none. With no model configured on
the worker (OPENAI_API_KEY / OPENAI_BASE_URL), teams run on scripts: the FAANG team answers its
recorded question whatever you ask, and your team answers from its own script (--script, or
SCRIPT beside TEAMS) or says it has none. `--team myteams:TEAMS` is found from the working
directory (or give a file: path/to/myteams.py:TEAMS).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from temporalio.client import WorkflowFailureError, WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_teams.cli import arguments, time_commands
from durable_teams.cli.answer_commands import cmd_answer, cmd_approve, cmd_pending
from durable_teams.cli.commands import (
    CliError,
    cmd_chat,
    cmd_demo,
    cmd_follow,
    cmd_graph,
    cmd_run,
    cmd_status,
    cmd_transcript,
    not_found,
)
from durable_teams.cli.extras import missing_extra
from durable_teams.cli.interrupt import interruptible
from durable_teams.client.exit_guard import exit_now
from durable_teams.client.refusals import (
    ConversationBusy,
    ConversationEnded,
    ReplyRejected,
    TurnAbandoned,
)
from durable_teams.client.server_state import root_cause
from durable_teams.encryption.codec import EncryptionKeyError
from durable_teams.live.hub import LiveHubError
from durable_teams.worker.core_log import forward_core_log

SERVER_COMMANDS = ("demo", "worker", "server-start", "server-stop")
COMMANDS = {
    "run": cmd_run, "status": cmd_status, "transcript": cmd_transcript, "pending": cmd_pending,
    "answer": cmd_answer, "approve": cmd_approve, "deny": cmd_approve, "demo": cmd_demo,
    "chat": cmd_chat, "follow": cmd_follow, "graph": cmd_graph,
    "checkpoints": time_commands.cmd_checkpoints, "fork": time_commands.cmd_fork,
    "rewind": time_commands.cmd_rewind,
}


def parser() -> argparse.ArgumentParser:
    """The `durable-teams` command line: this module's usage text over each group of commands
    (cli/arguments.py, cli/time_commands.py)."""
    p = argparse.ArgumentParser(prog="durable-teams", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="command")
    arguments.add_running(sub)
    arguments.add_conversations(sub)
    arguments.add_people(sub)
    arguments.add_graph(sub)
    time_commands.add_parsers(sub)
    return p


def commands(p: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str | None]]:
    """Each command of `p` (a `parser()`): its own parser and its line in `--help`."""
    (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {a.dest: a.help for a in sub._choices_actions}
    return {name: (command, helps.get(name)) for name, command in sub.choices.items()}


def run(argv: list[str]) -> None:
    """Parse `argv` and run its command, ending the process (main.py's `main` for the commands
    this module's parser knows)."""
    args = parser().parse_args(argv)
    for option, variable in (("port", "DURABLE_TEAMS_PORT"), ("ui_port", "DURABLE_TEAMS_UI_PORT"),
                             ("codec_server", "DURABLE_TEAMS_CODEC_PORT")):
        if getattr(args, option, None) is not None:
            os.environ[variable] = str(getattr(args, option))
    # The SDK core's warnings to stderr (Python's logging), not into stdout a script reads.
    forward_core_log()
    try:
        code = (server_command(args) if args.command in SERVER_COMMANDS[1:]
                else asyncio.run(interruptible(run_command(args))))
    except KeyboardInterrupt:
        code = 130
    except SystemExit as stop:  # the worker's one line on a bad setting
        code = stop.code if isinstance(stop.code, int | str) else 0 if stop.code is None else 1
    except BrokenPipeError:  # `durable-teams follow ... | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    exit_now(code)


def server_command(args: argparse.Namespace) -> int | str:
    from durable_teams.worker.devserver import DevServer, PortTaken

    try:
        if args.command == "server-stop":
            print("Stopped." if DevServer().stop_detached() else "No embedded server was started here.")
        elif args.command == "server-start":
            server = DevServer().start(detach=True)
            state = "Already running" if server.reused else "Started"
            print(f"{state}: Temporal at {server.address} (database {server.db_file})")
            print(f"Web UI: {server.ui_url}")
            if server.codec_url:
                print(f"Codec server: {server.codec_url} (the Web UI shows payloads decoded"
                      + ("; a reused server keeps the codec endpoint it was started with)" if server.reused else ")"))
        else:
            from durable_teams.worker.run import main as run_worker

            run_worker([f"--team={team}" for team in args.team] + (["--examples"] if args.examples else [])
                       + ([f"--task-queue={args.task_queue}"] if args.task_queue else [])
                       + ([f"--script={args.script}"] if args.script else []))
    except (PortTaken, RuntimeError, ValueError, FileNotFoundError) as err:
        return f"durable-teams: {str(err).splitlines()[0]}"
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        return f"durable-teams: {one_line(err)}"
    return 0


async def run_command(args: argparse.Namespace) -> int | str:
    """The command's exit status, or one readable line instead of a traceback."""
    workflow_id = getattr(args, "workflow_id", None)
    try:
        return await COMMANDS[args.command](args)
    except CliError as err:
        return f"durable-teams: {err}"
    except WorkflowFailureError as err:
        workflow_id = getattr(args, "workflow_id", None) or workflow_id
        return f"durable-teams: conversation {workflow_id} failed: {root_cause(err)}"
    except RPCError as err:
        return f"durable-teams: {not_found(err, workflow_id) or f'the Temporal server refused the call: {err.message}'}"
    except WorkflowQueryFailedError as err:
        return f"durable-teams: the workflow could not answer: {err.message}"
    except (ReplyRejected, ConversationEnded, TurnAbandoned, ConversationBusy, EncryptionKeyError,
            LiveHubError) as err:
        return f"durable-teams: {err}"
    except SystemExit as stop:  # a command's own sys.exit("reason")
        if stop.code is None:
            return 0
        return stop.code if isinstance(stop.code, int | str) else 1
    except BrokenPipeError:
        raise
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        return f"durable-teams: {one_line(err)}"


def one_line(err: BaseException) -> str:
    """An unexpected error as one line: its type and the first line of its message (for a
    missing optional extra: which one to install)."""
    extra = missing_extra(err)
    if extra is not None:
        return extra
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__
