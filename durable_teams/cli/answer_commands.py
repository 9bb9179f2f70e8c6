"""The CLI's commands for the people in the loop: list what waits, answer, approve, deny.

With a worker running, a reply goes through the `answer` update and is checked at once; with
none, it is checked against the conversation's memo and sent as the durable `human_reply`
signal, which the workflow checks when a worker runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import timedelta

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.cli.commands import CliError, open_client, text_arg
from durable_teams.cli.console import format_question
from durable_teams.client.send import send_reply
from durable_teams.client.server_state import memo_questions, pending_questions, workers_on
from durable_teams.client.updates_off import updates_disabled
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import HumanReply, Question


async def cmd_pending(args: argparse.Namespace) -> int:
    """Every question this client can read; one line on stderr for each conversation it cannot
    (encrypted under a key it lacks, say), which does not keep the others from being listed."""
    unreadable: list[tuple[str, str]] = []
    found = await pending_questions(await open_client(), unreadable=unreadable)
    if not found:
        print("No other questions are waiting for a person." if unreadable
              else "No questions are waiting for a person.")
    for workflow_id, q in found:
        print(format_question(workflow_id, q))
        print()
    for workflow_id, why in unreadable:
        print(f"durable-teams: the questions of {workflow_id} cannot be read here: {why}", file=sys.stderr)
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
        return (f"{q.question_id} asks for an approval of {q.tool or q.step}: reply with durable-teams "
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
    if qid is None:  # no question asked yet: the worker names the one it asks
        return await send_reply(client, args.workflow_id, qid, **fields), ""
    answer = HumanReply(question_id=qid, **fields)  # type: ignore[arg-type]
    why = "no worker is running"
    if workers:
        wait = answer_wait()
        why = await accepted_within(handle, answer, wait) or ""
        if not why:
            return qid, ""
    # A signal is durable: the workflow checks it when a worker runs it (a rejected one shows
    # in `status` as ignored), and an update that was taken meanwhile makes it a no-op.
    await handle.signal(TeamWorkflow.human_reply, answer)
    return qid, why


ANSWER_WAIT_ENV = "DURABLE_TEAMS_ANSWER_WAIT"


def answer_wait() -> timedelta:
    """`$DURABLE_TEAMS_ANSWER_WAIT` (default 10): how long `answer` waits for a worker to
    accept an answer before queueing it as a signal. Read when used, so a bad value is one
    line from `answer`, not a traceback from every command."""
    raw = os.environ.get(ANSWER_WAIT_ENV, "10").strip()
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86_400:  # also NaN
        raise CliError(f"{ANSWER_WAIT_ENV} must be seconds above 0 and at most 86400, not {raw!r}")
    return timedelta(seconds=seconds)


async def accepted_within(handle: WorkflowHandle, answer: HumanReply, wait: timedelta) -> str | None:
    """Send the answer as the `answer` update and wait until a worker accepted it (None), else
    say why it goes as a signal instead: `wait` passed, or the namespace has updates off. A
    rejection (validated by the worker) is a CliError."""
    late = f"no worker took it within {wait.total_seconds():g} s"
    try:
        update = await handle.start_update(TeamWorkflow.answer, answer, rpc_timeout=wait,
                                           wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        # A rejection by the validator does not raise from start_update: its outcome is known
        # at once, and result() raises it (the handler itself returns without waiting).
        await update.result(rpc_timeout=wait)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        return late
    except WorkflowUpdateFailedError as err:
        raise CliError(f"Rejected: {getattr(err.cause, 'message', err.cause)}") from None
    except RPCError as err:
        if err.status == RPCStatusCode.DEADLINE_EXCEEDED:
            return late
        if updates_disabled(err):
            return UPDATES_OFF
        raise
    return None


UPDATES_OFF = "this namespace has workflow updates turned off"


def queued(why: str) -> str:
    if why == UPDATES_OFF:
        return f"sent as a signal: {why}; the conversation checks it (`status` shows a refusal)"
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
    fields: dict[str, object] = {"approved": approved, "text": text_arg(args.reason or "", "the reason")}
    if getattr(args, "arguments", None) is not None:  # a breakpoint's call, resumed with new arguments
        try:
            edited = json.loads(text_arg(args.arguments, "--arguments"))
        except ValueError as err:
            raise CliError(f"--arguments is not JSON: {err}") from None
        if not isinstance(edited, dict) or not approved:
            raise CliError("--arguments takes a JSON object, with approve")
        fields["arguments"] = json.dumps(edited)
    if getattr(args, "result", None) is not None:  # a breakpoint after a tool: the result, edited
        fields["result"] = text_arg(args.result, "--result")
    qid, why = await reply(args, True, **fields)
    verb = "Approval of" if approved else "Denial of"
    print(f"{verb} {qid} {queued(why)}." if why else f"{'Approved' if approved else 'Denied'} {qid}.")
    return 0
