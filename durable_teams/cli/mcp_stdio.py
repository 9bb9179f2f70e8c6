"""`durable-teams mcp`: the served teams as MCP tools over stdio, for an assistant that starts
its MCP servers as commands (an IDE, a desktop chat app, an agent CLI).

    durable-teams mcp [--team module:attr] [--examples] [--task-queue Q] [--wait SECONDS]

It talks to the configured Temporal server, as the CLI's other commands do; the conversations
run on the workers and outlive this process (a call that took longer than --wait returns the
thread id to wait on again). stdout carries the protocol only: logs go to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from durable_teams.cli.commands import CliError, open_client
from durable_teams.cli.extras import missing_extra
from durable_teams.cli.serve import run_until_stopped
from durable_teams.client.connection import TASK_QUEUE, NamespaceNotFound, require_namespace
from durable_teams.gateway.team_cards import card_of, descriptions
from durable_teams.worker.core_log import forward_core_log
from durable_teams.worker.run import TeamLoadError, load_teams


def positive_seconds(text: str) -> float:
    """`--wait`'s value: a number of seconds above 0 (argparse says why not, in one line)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return seconds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams mcp", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--team", action="append", default=[], help="module:attr of the teams the workers serve")
    p.add_argument("--examples", action="store_true", help="the workers serve the example teams too "
                   "(assumed when no --team is given)")
    p.add_argument("--task-queue", default=TASK_QUEUE, help="where new threads run")
    p.add_argument("--wait", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="how long a call waits for the team's answer before it returns the thread id")
    return p


async def _serve(args: argparse.Namespace) -> None:
    from mcp.server.stdio import stdio_server

    from durable_teams.gateway.mcp_door import McpDoor
    from durable_teams.gateway.threads import Gateway

    cards = [card_of(team.spec) for team in load_teams(args.team, args.examples)]
    client = await open_client()
    await require_namespace(client)
    gateway = Gateway(client, args.task_queue, teams=[card.name for card in cards])
    server = McpDoor(gateway, descriptions(cards), wait_seconds=args.wait).server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        import mcp  # noqa: F401
    except ImportError as err:
        print(f"durable-teams: {missing_extra(err, 'mcp')}", file=sys.stderr)
        return 2
    forward_core_log()
    run_until_stopped(_serve(args), (CliError, TeamLoadError, NamespaceNotFound))
