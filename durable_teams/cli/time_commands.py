"""The CLI's time travel: `checkpoints ID`, `fork ID [--at C] [--message T]`, `rewind ID --to C`
(durable_teams/client/time_travel.py; docs/time-travel.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable
from typing import TypeVar

from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.cli.commands import CliError, open_client, text_arg
from durable_teams.client.checkpoints import Checkpoint
from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.server_state import memo_questions, worker_notes, workers_on
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints, rewind
from durable_teams.workflows.state import Question

T = TypeVar("T")

CHECKPOINT_ID = """
A checkpoint id is <run tag>.<history event id>, as `durable-teams checkpoints ID` lists them
(9f3c2a1b.19): a turn taken (kind turn, id ending t<n>), a model reply (model), a tool result
(tool), an answered question (answer) or a turn's end (turn_end, id ending e<n>)."""
CHECKPOINTS_HELP = f"""List a conversation's checkpoints, oldest first, one a line: its id, its kind and what
happened there. Read from the conversation's history: no worker needed.{CHECKPOINT_ID}

examples:
  durable-teams checkpoints support-1a2b3c
  durable-teams checkpoints support-1a2b3c --run-id RUN   # the branch a rewind abandoned"""
FORK_HELP = f"""Start a new conversation (its workflow id is printed) whose state is this one's at a
checkpoint; nothing before the checkpoint runs again and the original is untouched.
At a turn's start (turn) the fork answers that turn again, with --message in place of its text;
at a turn's end (turn_end, the default: the latest) --message is the fork's next turn; inside a
turn (model, tool, answer) the fork continues that turn.{CHECKPOINT_ID}

examples:
  durable-teams fork support-1a2b3c                                # from the latest turn end
  durable-teams fork support-1a2b3c --at 9f3c2a1b.7t1 --message "refund B2 instead"
  durable-teams fork support-1a2b3c --at 9f3c2a1b.33e1 --message "and my gloves?" --id gloves-1"""
REWIND_HELP = f"""Continue this same conversation from a checkpoint (a turn's start or end): a Temporal reset.
The turns after it are abandoned (a question they wait at is dropped, and their senders are told);
the abandoned branch stays readable as an earlier run (`checkpoints ID --run-id RUN`, the run id
printed).{CHECKPOINT_ID}

examples:
  durable-teams rewind support-1a2b3c --to 9f3c2a1b.33e1"""


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    raw = argparse.RawDescriptionHelpFormatter
    points = sub.add_parser("checkpoints", help="list a conversation's checkpoints (no worker needed)",
                            description=CHECKPOINTS_HELP, formatter_class=raw)
    points.add_argument("workflow_id", help="the conversation's workflow id")
    points.add_argument("--run-id", help="the branch ending with this run (one a rewind abandoned)")
    branch = sub.add_parser("fork", help="start a new conversation from a checkpoint of this one",
                            description=FORK_HELP, formatter_class=raw)
    branch.add_argument("workflow_id", help="the conversation to fork")
    branch.add_argument("--at", metavar="CHECKPOINT", help="the checkpoint (default: the latest turn end)")
    branch.add_argument("--message", help="at a turn's start: its edited message; at a turn's end: the next turn")
    branch.add_argument("--id", dest="fork_id", help="the fork's workflow id (default: <id>-fork-<random>)")
    back = sub.add_parser("rewind", help="continue this conversation from a checkpoint (the rest stays as an earlier run)",
                          description=REWIND_HELP, formatter_class=raw)
    back.add_argument("workflow_id", help="the conversation to rewind")
    back.add_argument("--to", required=True, metavar="CHECKPOINT", help="the checkpoint (a turn's start or end)")


async def cmd_checkpoints(args: argparse.Namespace) -> int:
    for point in await _checked(list_checkpoints(await open_client(), args.workflow_id, run_id=args.run_id)):
        agent = f" [{point.agent}]" if point.agent else ""
        print(f"{point.id:<16} {point.kind:<8}{agent} {point.description}")
    return 0


async def cmd_fork(args: argparse.Namespace) -> int:
    message = text_arg(args.message, "--message") if args.message is not None else None
    client = await open_client()
    try:
        forked = await _checked(fork(client, args.workflow_id, at=args.at, message=message,
                                     fork_id=args.fork_id))
    except WorkflowAlreadyStartedError:
        raise CliError(f"a conversation with workflow id {args.fork_id!r} exists already: "
                       "give the fork another --id (or none: a new one is made)") from None
    print(forked.workflow_id)
    print(f"forked from {forked.forked_from}" + (
        f", first turn: {forked.first_turn}" if forked.first_turn else ""))
    queue = (await client.get_workflow_handle(forked.workflow_id).describe()).task_queue
    for note in worker_notes(await workers_on(client, queue), queue):
        print(note, file=sys.stderr)
    return 0


async def cmd_rewind(args: argparse.Namespace) -> int:
    client = await open_client()
    described = await client.get_workflow_handle(args.workflow_id).describe()
    left = described.run_id
    before = await _checked(list_checkpoints(client, args.workflow_id))
    asked = memo_questions(await described.memo()) or []
    run_id = await _checked(rewind(client, args.workflow_id, to=args.to))
    print(f"{args.workflow_id} continues from {args.to} (run {run_id}); the abandoned branch "
          f"stays readable: durable-teams checkpoints {args.workflow_id} --run-id {left}")
    for line in abandoned(before, args.to, asked):
        print(line)
    return 0


def abandoned(points: list[Checkpoint], to: str, asked: list[Question]) -> list[str]:
    """What a rewind to checkpoint `to` left behind: each turn taken after it (and whether it
    had ended), and the questions that were waiting for a person."""
    target = next((p for p in points if p.id == to), None)
    if target is None or target.turn is None:
        return []
    first = target.turn if target.kind == "turn" else target.turn + 1
    ended = {p.turn for p in points if p.kind == "turn_end"}
    lines = [f"abandoned: turn {p.turn} ({short(p.text or '')!r}), " + ("answered" if p.turn in ended else "not answered")
             for p in points if p.kind == "turn" and p.turn is not None and p.turn >= first]
    lines += [f"abandoned: question {q.question_id} of {q.agent}: {short(q.step if q.kind == 'approval' else q.text)}"
              + " (it is no longer asked)" for q in asked]
    return lines


def short(text: str, limit: int = 100) -> str:
    """`text` on one line, cut at `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


async def _checked(work: Awaitable[T]) -> T:
    try:
        return await work
    except (CheckpointError, ReplayFailed) as err:
        raise CliError(str(err)) from None

