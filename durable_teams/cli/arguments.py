"""The `durable-teams` command's arguments, a group of commands at a time (the parser itself,
with the usage text: cli/main.py; the time-travel commands: cli/time_commands.py)."""

from __future__ import annotations

import argparse

from durable_teams.cli.commands import tenant_arg, user_arg
from durable_teams.client.connection import TASK_QUEUE
from durable_teams.client.server_address import port_arg

TEAM_HELP = "module:attr (or path/to/file.py:attr) of teams; found from the working directory"
SCRIPT_HELP = ("replies for the scripted model (no OPENAI_API_KEY / OPENAI_BASE_URL): a JSON file, or "
               "module:attr; default: the module's SCRIPT beside TEAMS (docs/scripted-models.md)")

Commands = argparse._SubParsersAction  # type: ignore[type-arg]


def ports_options() -> argparse.ArgumentParser:
    """The embedded server's ports, for the commands that start it or stop it."""
    ports = argparse.ArgumentParser(add_help=False)
    ports.add_argument("--port", type=port_arg, help="embedded server's gRPC port ($DURABLE_TEAMS_PORT, 7233)")
    ports.add_argument("--ui-port", type=port_arg, help="its Web UI port ($DURABLE_TEAMS_UI_PORT, port + 1000)")
    return ports


def queue_option() -> argparse.ArgumentParser:
    """The task queue a worker serves, or a conversation's teams run on."""
    queue = argparse.ArgumentParser(add_help=False)
    queue.add_argument("--task-queue", default=None, metavar="NAME",
                       help=f"the task queue its teams run on ($TEMPORAL_TASK_QUEUE, {TASK_QUEUE!r})")
    return queue


def tenancy_options() -> argparse.ArgumentParser:
    """Whose a new conversation is (docs/architecture.md, "Tenants and users")."""
    tenancy = argparse.ArgumentParser(add_help=False)
    tenancy.add_argument("--tenant", type=tenant_arg, metavar="NAME",
                         help="the tenant the conversation belongs to (a gateway scope's name)")
    tenancy.add_argument("--user", type=user_arg, metavar="ID",
                         help="the end user it speaks for (the memory tools' user_id)")
    return tenancy


def add_running(sub: Commands) -> None:
    """The commands that run something (the demo, a worker, the embedded server), and those that
    read their own options (named here for `--help`; cli/main.py hands them their arguments)."""
    ports, queue = ports_options(), queue_option()
    demo = sub.add_parser("demo", parents=[ports], help="run a demo team (faang or support) on the "
                          "embedded server, with a worker in this process")
    demo.add_argument("name", nargs="?", default="faang", choices=["faang", "support"])
    worker = sub.add_parser("worker", parents=[ports, queue], help="run a worker (same as python worker.py)")
    worker.add_argument("--team", action="append", default=[], help=TEAM_HELP)
    worker.add_argument("--script", metavar="FILE", help=SCRIPT_HELP)
    worker.add_argument("--examples", action="store_true", help="also serve the example teams (served by "
                        "default only when no --team is given)")
    server_start = sub.add_parser("server-start", parents=[ports], help="start the embedded Temporal "
                                  "dev server and its Web UI (left running; stop with server-stop)")
    server_start.add_argument("--codec-server", nargs="?", type=port_arg, const=8081, metavar="PORT",
                              help="also a codec server on PORT (8081; $DURABLE_TEAMS_CODEC_PORT), "
                              "the Web UI showing payloads decoded with DURABLE_TEAMS_ENCRYPTION_KEY")
    sub.add_parser("server-stop", parents=[ports], help="stop the embedded dev server started by "
                   "the CLI or the worker")
    sub.add_parser("codec-server", help="decrypt payloads for the Web UI (codec-server --help)")
    sub.add_parser("serve", help="the HTTP gateway: native endpoints, an OpenAI-compatible API and a "
                   "web inbox (serve --help)")
    sub.add_parser("memory", help="list, get, put or delete memory store items (memory --help)")
    sub.add_parser("replay", help="replay recorded conversations against a changed team, model or prompt, "
                   "and report what changed (replay --help)")


def add_conversations(sub: Commands) -> None:
    """The commands that start a conversation, talk to one or read one."""
    queue, tenancy = queue_option(), tenancy_options()
    chat = sub.add_parser("chat", parents=[queue, tenancy], help="talk to a team, turn by turn (a thread per workflow)")
    chat.add_argument("team")
    chat.add_argument("--thread", help="the conversation's workflow id (new or existing)")
    run = sub.add_parser("run", parents=[queue, tenancy], help="start a team on a task and print its answer", epilog=(
        "Exit status: 0 for an answer; 3 for an answer cut off at the model's token limit or "
        "stopped by a content filter (printed, with a warning on stderr); 1 when the turn "
        "failed or ran out of budget, or on any error."))
    run.add_argument("team")
    run.add_argument("task")
    run.add_argument("--id", help="the workflow id (default: <team>-<random>)")
    run.add_argument("--no-wait", action="store_true", help="print only the workflow id and return")
    status = sub.add_parser("status", help="a conversation's state, last reply, pending questions and refused signals")
    status.add_argument("workflow_id")
    transcript = sub.add_parser("transcript", help="a conversation's messages")
    transcript.add_argument("workflow_id")
    transcript.add_argument("--full", action="store_true", help="include every agent's private steps")
    follow = sub.add_parser("follow", help="print a conversation's steps as they happen, until it ends")
    follow.add_argument("workflow_id")
    follow.add_argument("--start", type=int, default=0, help="log index to start from")


def add_people(sub: Commands) -> None:
    """The commands of a person in the loop: the questions waiting, their answers, approvals."""
    sub.add_parser("pending", help="list every question waiting for a person (no worker needed)")
    answer = sub.add_parser("answer", help="answer a pending question (queued if no worker runs)")
    answer.add_argument("workflow_id")
    answer.add_argument("text")
    answer.add_argument("--question", help="the question id (needed when several are pending)")
    for name, what in (("approve", "approve"), ("deny", "deny")):
        cmd = sub.add_parser(name, help=f"{what} a tool call that waits for approval")
        cmd.add_argument("workflow_id")
        cmd.add_argument("--question", help="the question id (needed when several are pending)")
        cmd.add_argument("--reason", default="", help="a note the agent sees")
        if name == "approve":
            cmd.add_argument("--arguments", help="a breakpoint's tool call: run it with these arguments (JSON object)")
            cmd.add_argument("--result", help="a breakpoint after a tool call: the result the model sees instead")


def add_graph(sub: Commands) -> None:
    """`graph`: a team drawn, read from its definition."""
    graph = sub.add_parser("graph", help="print a team as a Mermaid diagram")
    graph.add_argument("team")
    graph.add_argument("--team", dest="team_module", action="append", default=[],
                       help=f"{TEAM_HELP} (extra teams)")
