"""The CLI's time travel: `checkpoints ID`, `fork ID [--at C] [--message T]`, `rewind ID --to C`
(durable_teams/client/time_travel.py; docs/time-travel.md)."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable
from typing import TypeVar

from durable_teams.cli.commands import CliError, open_client, text_arg
from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints, rewind

T = TypeVar("T")


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    points = sub.add_parser("checkpoints", help="list a conversation's checkpoints (no worker needed)")
    points.add_argument("workflow_id")
    points.add_argument("--run-id", help="the branch ending with this run (one a rewind abandoned)")
    branch = sub.add_parser("fork", help="start a new conversation from a checkpoint of this one")
    branch.add_argument("workflow_id")
    branch.add_argument("--at", help="the checkpoint (default: the latest turn end)")
    branch.add_argument("--message", help="at a turn's start: its edited message; at a turn's end: the next turn")
    branch.add_argument("--id", dest="fork_id", help="the fork's workflow id (default: <id>-fork-<random>)")
    back = sub.add_parser("rewind", help="continue this conversation from a checkpoint (the rest stays as an earlier run)")
    back.add_argument("workflow_id")
    back.add_argument("--to", required=True, help="the checkpoint (a turn's start or end)")


async def cmd_checkpoints(args: argparse.Namespace) -> int:
    for point in await _checked(list_checkpoints(await open_client(), args.workflow_id, run_id=args.run_id)):
        agent = f" [{point.agent}]" if point.agent else ""
        print(f"{point.id:<16} {point.kind:<8}{agent} {point.description}")
    return 0


async def cmd_fork(args: argparse.Namespace) -> int:
    message = text_arg(args.message, "--message") if args.message is not None else None
    forked = await _checked(fork(await open_client(), args.workflow_id, at=args.at,
                                 message=message, fork_id=args.fork_id))
    print(forked.workflow_id)
    print(f"forked from {forked.forked_from}" + (
        f", first turn: {forked.first_turn}" if forked.first_turn else ""))
    return 0


async def cmd_rewind(args: argparse.Namespace) -> int:
    client = await open_client()
    left = (await client.get_workflow_handle(args.workflow_id).describe()).run_id
    run_id = await _checked(rewind(client, args.workflow_id, to=args.to))
    print(f"{args.workflow_id} continues from {args.to} (run {run_id}); the abandoned branch "
          f"stays readable: durable-teams checkpoints {args.workflow_id} --run-id {left}")
    return 0


async def _checked(work: Awaitable[T]) -> T:
    try:
        return await work
    except (CheckpointError, ReplayFailed) as err:
        raise CliError(str(err)) from None
