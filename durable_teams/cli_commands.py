"""The CLI's commands that talk to a Temporal server (parsing and errors are in cli.py).

None of them starts a server, and none waits on a worker without saying so: a running
conversation's questions are read from its memo, a finished one from its result.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from datetime import timedelta

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import send_reply
from durable_teams.console import (
    FLAG_WARNINGS,
    format_event,
    format_message,
    format_question,
    format_refused,
    run_exit_code,
)
from durable_teams.costs import usage_lines
from durable_teams.devserver import port_open
from durable_teams.events import follow
from durable_teams.reading import (
    QUERY_TIMEOUT,
    finished_result,
    memo_questions,
    no_worker_note,
    pending_questions,
    result_messages,
    worker_notes,
    workers_on,
)
from durable_teams.replayed import ReplayFailed, replayed_transcript
from durable_teams.runtime import TASK_QUEUE, connect, default_address
from durable_teams.starting import start_conversation
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import (
    ConversationInput,
    ConversationStatus,
    HumanReply,
    Question,
)


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


async def open_client() -> Client:
    """A client of the configured server; says at once when none is there (never starts one)."""
    address = default_address()
    host, _, port = address.rpartition(":")
    reachable = port.isdigit() and port_open(host or "127.0.0.1", int(port), timeout=3.0)
    hint = "" if os.environ.get("TEMPORAL_ADDRESS") else " (start one: durable-teams server-start)"
    if not reachable:
        raise CliError(f"no Temporal server at {address}{hint}")
    try:
        return await connect(address)
    except RuntimeError as err:
        raise CliError(f"no Temporal server at {address}: {str(err).splitlines()[0]}") from None


async def cmd_run(args: argparse.Namespace) -> int:
    task = text_arg(args.task, "the task")
    client = await open_client()
    args.workflow_id = args.id or f"{args.team}-{uuid.uuid4().hex[:8]}"
    handle = await start_conversation(client, args.team, ConversationInput(team_name=args.team, task=task),
                                      id=args.workflow_id, task_queue=TASK_QUEUE)
    notes = worker_notes(await workers_on(client, TASK_QUEUE), TASK_QUEUE)
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


async def cmd_status(args: argparse.Namespace) -> int:
    client = await open_client()
    described = await client.get_workflow_handle(args.workflow_id).describe()
    state = described.status.name if described.status else "?"
    print(f"workflow: {args.workflow_id} ({state})")
    if described.status == WorkflowExecutionStatus.COMPLETED:
        result = await finished_result(client, args.workflow_id)
        print(f"turns: {result.turns}  model calls: {result.model_calls}")
        print(f"last reply [{result.agent}, {result.status}]: {result.answer}")
        print("\n".join(usage_lines(result.usage)))
        return 0
    if described.status != WorkflowExecutionStatus.RUNNING:
        await finished_result(client, args.workflow_id)  # raises the failure, if it failed
        return 0
    if not await workers_on(client, described.task_queue):
        print(no_worker_note(described.task_queue))
        for q in memo_questions(await described.memo()) or []:
            print(format_question(args.workflow_id, q))
        return 0
    status: ConversationStatus = await client.get_workflow_handle(args.workflow_id).query(
        TeamWorkflow.status, rpc_timeout=QUERY_TIMEOUT)
    print(f"turns: {status.turns}  model calls: {status.model_calls}  active agent: {status.active_agent or '-'}")
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


async def cmd_transcript(args: argparse.Namespace) -> int:
    client = await open_client()
    handle = client.get_workflow_handle(args.workflow_id)
    described = await handle.describe()
    messages = None
    if described.status == WorkflowExecutionStatus.COMPLETED:
        messages = result_messages(await finished_result(client, args.workflow_id), args.full)
    if messages is None and described.status != WorkflowExecutionStatus.RUNNING:
        messages = await rebuilt_transcript(client, args.workflow_id, args.full)
    if described.status == WorkflowExecutionStatus.FAILED:
        for m in messages or []:
            print(format_message(m), flush=True)
        await finished_result(client, args.workflow_id)  # raises: says why it failed (exit 1)
    if messages is None:
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
    described = await client.get_workflow_handle(args.workflow_id).describe()
    if described.status == WorkflowExecutionStatus.RUNNING and not await workers_on(
            client, described.task_queue):
        raise CliError(f"{args.workflow_id} is running, but no worker is polling task queue "
                       f"{described.task_queue!r}, so nothing will happen to follow "
                       "(start one: durable-teams worker)")
    async for event in follow(client, args.workflow_id, start=args.start):
        if event.type == "done":
            print(f"(workflow {event.text.lower()})")
        else:
            print(format_event(event), flush=True)
    return 0


async def cmd_pending(args: argparse.Namespace) -> int:
    found = await pending_questions(await open_client())
    if not found:
        print("No questions are waiting for a person.")
    for workflow_id, q in found:
        print(format_question(workflow_id, q))
        print()
    return 0


def pick_question(workflow_id: str, questions: list[Question], question_id: str | None) -> Question:
    """The question a reply is for: the one named, or the only one pending."""
    if question_id is not None:
        for q in questions:
            if q.question_id == question_id:
                return q
        known = ", ".join(q.question_id for q in questions) or "none"
        raise CliError(f"{workflow_id} has no pending question {question_id!r} (pending: {known})")
    if len(questions) != 1:
        ids = ", ".join(q.question_id for q in questions) or "none"
        raise CliError(f"{workflow_id} has {len(questions)} questions pending ({ids}); name one with --question")
    return questions[0]


def kind_problem(workflow_id: str, q: Question, approving: bool) -> str | None:
    if approving and q.kind == "question":
        return (f"{q.question_id} is a question, not an approval: answer it with "
                f"durable-teams answer {workflow_id} \"<your answer>\" --question {q.question_id}")
    if not approving and q.kind == "approval":
        return (f"{q.question_id} asks for an approval of {q.tool}: reply with durable-teams "
                f"approve {workflow_id} --question {q.question_id} (or deny ... --reason '...')")
    return None


async def reply(args: argparse.Namespace, approving: bool, **fields: object) -> tuple[str, str]:
    """Send a reply: through the update when a worker runs (checked at once), else as the
    durable signal, checked against the memo now and by the workflow when a worker starts.
    Returns (question id, why it was queued: "" when a worker accepted it)."""
    client = await open_client()
    handle = client.get_workflow_handle(args.workflow_id)
    described = await handle.describe()
    if described.status != WorkflowExecutionStatus.RUNNING:
        state = described.status.name if described.status else "closed"
        raise CliError(f"{args.workflow_id} is not running ({state}): no question waits there")
    questions = memo_questions(await described.memo())
    qid = args.question
    if questions is not None:
        question = pick_question(args.workflow_id, questions, args.question)
        problem = kind_problem(args.workflow_id, question, approving)
        if problem:
            raise CliError(problem)
        qid = question.question_id
    workers = await workers_on(client, described.task_queue)
    if questions is None and not workers:
        raise CliError(f"no question of {args.workflow_id} is known without a worker: none has "
                       f"asked one so far (start a worker: durable-teams worker)")
    if qid is None:  # no memo (an older conversation): the worker names the question
        return await send_reply(client, args.workflow_id, qid, **fields), ""
    answer = HumanReply(question_id=qid, **fields)  # type: ignore[arg-type]
    why = "no worker is running"
    if workers:
        if await accepted_within(handle, answer, ANSWER_WAIT):
            return qid, ""
        why = f"no worker took it within {ANSWER_WAIT.total_seconds():g} s"
    # A signal is durable: the workflow checks it when a worker runs it (a rejected one shows
    # in `status` as ignored), and an update that was taken meanwhile makes it a no-op.
    await handle.signal(TeamWorkflow.human_reply, answer)
    return qid, why


ANSWER_WAIT = timedelta(seconds=float(os.environ.get("DURABLE_TEAMS_ANSWER_WAIT", "10")))
"""How long `answer` waits for a worker to accept an answer before queueing it as a signal."""


async def accepted_within(handle: WorkflowHandle, answer: HumanReply, wait: timedelta) -> bool:
    """Send the answer as the `answer` update and wait until a worker accepted it (True) or
    `wait` passed (False). A rejection (validated by the worker) is a CliError."""
    try:
        await handle.start_update(TeamWorkflow.answer, answer, rpc_timeout=wait,
                                  wait_for_stage=WorkflowUpdateStage.ACCEPTED)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        return False
    except WorkflowUpdateFailedError as err:
        raise CliError(f"Rejected: {getattr(err.cause, 'message', err.cause)}") from None
    except RPCError as err:
        if err.status == RPCStatusCode.DEADLINE_EXCEEDED:
            return False
        raise
    return True


def queued(why: str) -> str:
    return f"queued: {why}; it will be validated when one starts"


async def cmd_answer(args: argparse.Namespace) -> int:
    text = text_arg(args.text, "the answer")
    if not text.strip():
        raise CliError("the answer is empty")
    qid, why = await reply(args, False, text=text)
    print(f"Answer to {qid} {queued(why)}." if why else f"Answered {qid}.")
    return 0


async def cmd_approve(args: argparse.Namespace) -> int:
    approved = args.command == "approve"
    qid, why = await reply(args, True, approved=approved, text=text_arg(args.reason or "", "the reason"))
    verb = "Approval of" if approved else "Denial of"
    print(f"{verb} {qid} {queued(why)}." if why else f"{'Approved' if approved else 'Denied'} {qid}.")
    return 0


async def cmd_chat(args: argparse.Namespace) -> int:
    from durable_teams.chat import chat

    return await chat(await open_client(), args.team, args.thread)


async def cmd_demo(args: argparse.Namespace) -> int:
    from durable_teams.demo import run_demo

    return await run_demo(args.name)


async def cmd_graph(args: argparse.Namespace) -> int | str:
    from durable_teams.graph import team_graph
    from durable_teams.worker import load_teams

    try:
        teams = {t.spec.name: t.spec for t in load_teams(args.team_module)}
    except (ImportError, AttributeError, ValueError) as err:
        return f"durable-teams: could not load {args.team_module}: {err}"
    if args.team not in teams:
        return f"durable-teams: no team named {args.team!r} (known: {', '.join(sorted(teams))})"
    print(team_graph(teams[args.team]), end="")
    return 0


def not_found(err: RPCError, workflow_id: str | None) -> str | None:
    if err.status == RPCStatusCode.NOT_FOUND and workflow_id:
        return f"no conversation with workflow id {workflow_id!r} ({err.message})"
    return None


COMMANDS = {
    "run": cmd_run, "status": cmd_status, "transcript": cmd_transcript, "pending": cmd_pending,
    "answer": cmd_answer, "approve": cmd_approve, "deny": cmd_approve, "demo": cmd_demo,
    "chat": cmd_chat, "follow": cmd_follow, "graph": cmd_graph,
}
