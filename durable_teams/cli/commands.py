"""The CLI's commands that talk to a Temporal server (parsing and errors are in main.py).

None of them starts a server, and none waits on a worker without saying so: a running
conversation's questions are read from its memo, a finished one from its result.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.cli.console import (
    FLAG_WARNINGS,
    FollowPrinter,
    format_message,
    format_question,
    format_refused,
    run_exit_code,
)
from durable_teams.cli.costs import usage_lines
from durable_teams.client.connection import (
    TASK_QUEUE,
    TemporalRefused,
    TemporalUnreachable,
    configured_address,
    connect,
    default_address,
)
from durable_teams.client.events import follow
from durable_teams.client.replay_state import ReplayFailed, replayed_transcript
from durable_teams.client.server_address import port_open
from durable_teams.client.server_config import ServerConfigError, split_address
from durable_teams.client.server_state import (
    QUERY_TIMEOUT,
    failing_task,
    finished_result,
    memo_questions,
    no_worker_note,
    worker_notes,
    workers_on,
)
from durable_teams.client.start import start_conversation
from durable_teams.client.thread_ids import team_part
from durable_teams.live.from_env import hub_from_env
from durable_teams.live.hub import LIVE_URL_ENV
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.intake import MAX_ID_CHARS
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput
from durable_teams.workflows.tenancy import check_tenant


class CliError(Exception):
    """A failure the CLI reports as one line (exit code 1)."""


def text_arg(value: str, what: str) -> str:
    """`value` if it is valid UTF-8 text. Bytes that are not arrive from argv as lone
    surrogates (Python's surrogateescape), which no payload can carry."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise CliError(f"{what} is not valid UTF-8 text (undecodable byte at position {err.start})") from None
    return value


def tenant_arg(value: str) -> str:
    try:
        return check_tenant(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def user_arg(value: str) -> str:
    if not value.strip() or len(value) > MAX_ID_CHARS:
        raise argparse.ArgumentTypeError(f"a user id is 1 to {MAX_ID_CHARS} characters, not blank")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("a user id must be valid UTF-8 text") from None
    return value


async def open_client() -> Client:
    """A client of the configured server; says at once when none is there (never starts one)."""
    try:
        configured = configured_address()
        address = configured or default_address()
        host, port = split_address(address)
    except (ServerConfigError, ValueError) as err:  # ValueError: $DURABLE_TEAMS_PORT
        raise CliError(str(err)) from None
    hint = "" if configured else " (start one: durable-teams server-start)"
    if not port_open(host, port, timeout=3.0):
        raise CliError(f"no Temporal server at {address}{hint}")
    try:
        return await connect(address)
    except (TemporalUnreachable, TemporalRefused) as err:
        raise CliError(str(err)) from None


async def cmd_run(args: argparse.Namespace) -> int:
    task = text_arg(args.task, "the task")
    client = await open_client()
    args.workflow_id = args.id or f"{team_part(args.team)}-{uuid.uuid4().hex[:8]}"
    queue = args.task_queue or TASK_QUEUE
    handle = await start_conversation(client, args.team, ConversationInput(team_name=args.team, task=task),
                                      tenant=args.tenant, user=args.user, id=args.workflow_id,
                                      task_queue=queue)
    notes = worker_notes(await workers_on(client, queue), queue)
    if args.no_wait:  # only the id on stdout: `id=$(durable-teams run ... --no-wait)`
        print(args.workflow_id)
        for note in notes:
            print(note, file=sys.stderr)
        return 0
    print(f"workflow id: {args.workflow_id}")
    for note in notes:
        print(note, flush=True)
    result = await handle.result()
    print(f"[{result.agent}] {result.answer}")
    print("\n".join(usage_lines(result.usage)), flush=True)
    if result.status in FLAG_WARNINGS:
        print(FLAG_WARNINGS[result.status], file=sys.stderr)
    return run_exit_code(result.status)


async def refuse_if_stuck(client: Client, described: WorkflowExecutionDescription) -> None:
    """Say why, instead of querying, when the conversation's workflow task keeps failing (the
    query would fail with a transport error that names no cause)."""
    failing = await failing_task(client, described)
    if failing is not None:
        raise CliError(f"conversation {described.id} is stuck: {failing} (the worker's log has the whole error)")


async def cmd_status(args: argparse.Namespace) -> int:
    client = await open_client()
    described = await client.get_workflow_handle(args.workflow_id).describe()
    state = described.status.name if described.status else "?"
    print(f"workflow: {args.workflow_id} ({state})")
    forked_from = await forked_from_of(described)
    if forked_from:
        print(f"forked from: {forked_from}")
    if described.status == WorkflowExecutionStatus.COMPLETED:
        result = await finished_result(client, args.workflow_id)
        print(f"turns: {result.turns}  model calls: {result.model_calls}")
        print(f"last reply [{result.agent}, {result.status}]: {result.answer}")
        print("\n".join(usage_lines(result.usage)))
        return 0
    if described.status != WorkflowExecutionStatus.RUNNING:
        await finished_result(client, args.workflow_id)  # raises the failure, if it failed
        return 0
    await refuse_if_stuck(client, described)
    if not await workers_on(client, described.task_queue):
        print(no_worker_note(described.task_queue))
        for q in memo_questions(await described.memo()) or []:
            print(format_question(args.workflow_id, q))
        return 0
    status: ConversationStatus = await client.get_workflow_handle(args.workflow_id).query(
        TeamWorkflow.status, rpc_timeout=QUERY_TIMEOUT)
    asking = status.pending[0].agent if status.pending else None  # a supervisor's worker, say
    print(f"turns: {status.turns}  model calls: {status.model_calls}  "
          f"active agent: {status.active_agent or asking or '-'}")
    if status.last_reply:
        print(f"last reply [{status.last_reply.agent}, {status.last_reply.status}]: {status.last_reply.text}")
    print("\n".join(usage_lines(status.usage)))
    for q in status.pending:
        print(format_question(args.workflow_id, q))
    for line in format_refused(status.refused_signals, status.refused_signal_count):
        print(line)
    for child in status.children:  # their questions are listed, and answered, under their ids
        print(f"running as a child workflow: {child}  (durable-teams status {child})")
    return 0


async def forked_from_of(described: WorkflowExecutionDescription) -> str | None:
    """`<thread>@<checkpoint>` for a fork (from its memo), else None; None too when the memo
    cannot be read here (encrypted under a key this process lacks: the rest says so)."""
    try:
        origin = (await described.memo()).get("forked_from")
    except Exception:  # noqa: BLE001 - only a line of the status
        return None
    return origin if isinstance(origin, str) and origin else None


async def cmd_transcript(args: argparse.Namespace) -> int:
    client = await open_client()
    handle = client.get_workflow_handle(args.workflow_id)
    described = await handle.describe()
    messages = None
    if described.status != WorkflowExecutionStatus.RUNNING:
        messages = await rebuilt_transcript(client, args.workflow_id, args.full)
    if described.status == WorkflowExecutionStatus.FAILED:
        for m in messages or []:
            print(format_message(m), flush=True)
        await finished_result(client, args.workflow_id)  # raises: says why it failed (exit 1)
    if messages is None:
        await refuse_if_stuck(client, described)
        if not await workers_on(client, described.task_queue):
            raise CliError(f"the transcript of {args.workflow_id} is read by a worker, and "
                           f"no worker is polling task queue {described.task_queue!r} "
                           "(start one: durable-teams worker)")
        messages = await handle.query(TeamWorkflow.transcript, args.full, rpc_timeout=QUERY_TIMEOUT)
    for m in messages:
        print(format_message(m))
    return 0


async def rebuilt_transcript(client: Client, workflow_id: str, full: bool) -> list[Message] | None:
    """A closed conversation whose result carries no transcript (a failed one, one over the
    result's size limit): rebuilt from its history in this process, no worker needed; None,
    with one line on stderr saying why, when the history does not replay here."""
    try:
        return await replayed_transcript(client, workflow_id, full)
    except ReplayFailed as err:
        print(f"(the transcript could not be rebuilt from the history here: {err})", file=sys.stderr)
        return None


async def cmd_follow(args: argparse.Namespace) -> int:
    client = await open_client()
    # Live text comes only over a broker (DURABLE_TEAMS_LIVE_URL): the worker is another process.
    # Made first, so a setting that names no broker is said before anything is read.
    live = hub_from_env(client.data_converter.payload_codec) if os.environ.get(LIVE_URL_ENV) else None
    described = await client.get_workflow_handle(args.workflow_id).describe()
    if described.status == WorkflowExecutionStatus.RUNNING:
        await refuse_if_stuck(client, described)  # its log is read by queries, which would fail
    if described.status == WorkflowExecutionStatus.RUNNING and not await workers_on(
            client, described.task_queue):
        raise CliError(f"{args.workflow_id} is running, but no worker is polling task queue "
                       f"{described.task_queue!r}, so nothing will happen to follow "
                       "(start one: durable-teams worker)")
    printer = FollowPrinter(lambda text: (sys.stdout.write(text), sys.stdout.flush()))
    async for event in follow(client, args.workflow_id, start=args.start, live=live):
        printer.show(event)
    return 0


async def cmd_chat(args: argparse.Namespace) -> int:
    from durable_teams.cli.chat import chat

    return await chat(await open_client(), args.team, args.thread, args.task_queue or TASK_QUEUE,
                      tenant=args.tenant, user=args.user)


async def cmd_demo(args: argparse.Namespace) -> int:
    from durable_teams.cli.demo import run_demo

    return await run_demo(args.name)


async def cmd_graph(args: argparse.Namespace) -> int | str:
    from durable_teams.teams.graph import team_graph
    from durable_teams.worker.run import TeamLoadError, load_teams

    try:
        teams = {t.spec.name: t.spec for t in load_teams(args.team_module, examples=True)}
    except TeamLoadError as err:  # names the module and what went wrong
        return f"durable-teams: {err}"
    if args.team not in teams:
        return f"durable-teams: no team named {args.team!r} (known: {', '.join(sorted(teams))})"
    print(team_graph(teams[args.team]), end="")
    return 0


def not_found(err: RPCError, workflow_id: str | None) -> str | None:
    if err.status == RPCStatusCode.NOT_FOUND and workflow_id:
        return f"no conversation with workflow id {workflow_id!r} ({err.message})"
    return None
