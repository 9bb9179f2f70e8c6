"""Reading conversations without a worker: what the server itself holds.

A query runs workflow code, so it needs a worker (and replays the whole history on it). What the
server shows without one: which workers poll a task queue, a closed workflow's result (a
finished conversation carries its transcript there), and a running one's memo (the questions
waiting for a person, which the workflow keeps there).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, TaskQueueKind, TaskQueueType, WorkflowTaskFailedCause
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import PENDING_MEMO
from durable_teams.workflows.state import ConversationResult, Question

SCRIPTED_IDENTITY = "(scripted model)"
"""Part of the identity of a worker that runs teams on the scripted model (durable_teams/worker/build.py)."""
POLLER_FRESH = timedelta(seconds=90)
"""A worker re-polls at least every minute; an older poll is a worker that has gone."""
QUERY_TIMEOUT = timedelta(seconds=15)


async def workers_on(client: Client, task_queue: str) -> list[str]:
    """Identities of the workers polling `task_queue` for workflow tasks lately."""
    described = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    since = datetime.now(UTC) - POLLER_FRESH
    return [p.identity for p in described.pollers
            if p.last_access_time.ToDatetime(tzinfo=UTC) >= since]


JUST_STARTED_LOOKS, JUST_STARTED_EVERY = 5, 0.2
"""An empty queue is looked at this many times, this many seconds apart, before it counts as
having no worker: a worker started a moment ago is listed once its first poll reaches the
server (`durable-teams worker &` and a request at once)."""


async def workers_soon(client: Client, task_queue: str) -> list[str]:
    """`workers_on`, looking again for about a second while the queue lists none."""
    for look in range(JUST_STARTED_LOOKS):
        if look:
            await asyncio.sleep(JUST_STARTED_EVERY)
        if workers := await workers_on(client, task_queue):
            return workers
    return []


def no_worker_note(task_queue: str) -> str:
    return (f"No worker is polling task queue {task_queue!r}: the conversation waits and runs "
            "when one starts (durable-teams worker).")


SCRIPTED_NOTE = ("Model: SCRIPTED. The worker has no model configured (OPENAI_API_KEY or "
                 "OPENAI_BASE_URL), so agents replay recorded responses, whatever the task says.")


def worker_notes(workers: list[str], task_queue: str) -> list[str]:
    """What a person should know before waiting on these workers: none, or scripted ones."""
    if not workers:
        return [no_worker_note(task_queue)]
    if all(SCRIPTED_IDENTITY in w for w in workers):
        return [SCRIPTED_NOTE]
    return []


def root_cause(err: BaseException) -> str:
    """Why a failure chain failed: the outermost ApplicationError's own text (our workflow
    puts the reason there, its cause's text included, as in "MCP server 'x' could not list
    its tools: ..."), else the innermost message."""
    cause: BaseException = err
    while not isinstance(cause, ApplicationError) and cause.__cause__ is not None:
        cause = cause.__cause__
    return str(getattr(cause, "message", None) or cause)


async def failing_task(client: Client, described: WorkflowExecutionDescription) -> str | None:
    """Why a running conversation's workflow task keeps failing (a worker that cannot run it:
    a missing workflow type, a release it cannot replay, a payload it cannot decode), in one
    line; None when its task is not failing. Queries fail on such a conversation, with a
    transport error that says nothing of the cause; the history's last task failure does."""
    raw = described.raw_description
    if not raw.HasField("pending_workflow_task") or raw.pending_workflow_task.attempt < 2:
        return None
    page = await client.workflow_service.get_workflow_execution_history_reverse(
        GetWorkflowExecutionHistoryReverseRequest(
            namespace=client.namespace, maximum_page_size=50,
            execution=WorkflowExecution(workflow_id=described.id, run_id=described.run_id or "")))
    attempts = raw.pending_workflow_task.attempt
    for event in page.history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            failed = event.workflow_task_failed_event_attributes
            cause = WorkflowTaskFailedCause.Name(failed.cause).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
            text = (failed.failure.message or cause).splitlines()[0]
            return f"its workflow task keeps failing (attempt {attempts}, {cause.lower().replace('_', ' ')}): {text}"
    return f"its workflow task keeps failing (attempt {attempts})"


async def finished_result(client: Client, workflow_id: str) -> ConversationResult:
    """The result of a completed conversation (raises WorkflowFailureError if it failed)."""
    handle = client.get_workflow_handle_for(TeamWorkflow.run, workflow_id)
    return await handle.result()


def memo_questions(memo: Mapping[str, Any]) -> list[Question] | None:
    """The questions a running conversation's memo lists; None before it asked its first."""
    raw = memo.get(PENDING_MEMO)
    if raw is None:
        return None
    return [Question.model_validate(q) for q in raw]


async def questions_of(handle: WorkflowHandle) -> list[Question]:
    """A running conversation's pending questions, from its memo (no worker needed)."""
    described = await handle.describe()
    return memo_questions(await described.memo()) or []


WAITING_QUERY = "AwaitingHuman = true AND ExecutionStatus = 'Running'"
RUNNING_QUERY = f"WorkflowType = '{TeamWorkflow.__name__}' AND ExecutionStatus = 'Running'"
"""Without `AwaitingHuman` registered: every running conversation (their memos say which wait)."""


CHAT_MEMO = "chat"
"""Memo key of a thread the gateway started for a chat client that names no thread: its
questions are answered in the chat, so the inbox and `pending` leave them out."""


async def waiting_conversations(
    client: Client, *, unreadable: list[tuple[str, str]] | None = None,
) -> AsyncIterator[tuple[str, Mapping[str, Any], list[Question]]]:
    """(workflow id, memo, questions) of each running conversation with a question waiting for a
    person, from the visibility store: by `AwaitingHuman`, or, on a namespace without it, every
    running conversation's memo. A chat client's thread (`CHAT_MEMO`) is left out.

    A conversation whose questions this client cannot read (its memo encrypted under a key it
    lacks, or a query that fails) raises; with `unreadable` given, it is skipped and noted there
    as (workflow id, why in one line), and the others still come."""
    query = WAITING_QUERY
    try:
        listed = [wf async for wf in client.list_workflows(query)]
    except RPCError as err:
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        query = RUNNING_QUERY
        listed = [wf async for wf in client.list_workflows(query)]
    for wf in listed:
        try:
            memo = await wf.memo()
            if memo.get(CHAT_MEMO):
                continue
            questions = memo_questions(memo)
        except Exception as err:  # noqa: BLE001 - the caller asked to hear of it and go on
            if unreadable is None:
                raise
            why = getattr(err, "message", None) or str(err) or type(err).__name__
            unreadable.append((wf.id, str(why).strip().splitlines()[0]))
            continue
        if questions:
            yield wf.id, memo, questions


async def pending_questions(
    client: Client, *, unreadable: list[tuple[str, str]] | None = None,
) -> list[tuple[str, Question]]:
    """Every question waiting for a person, read from the visibility store (no worker). With
    `unreadable`, conversations this client cannot read are noted there instead of raising."""
    return [(wid, q) async for wid, _, questions in waiting_conversations(client, unreadable=unreadable)
            for q in questions]


async def why_it_failed(client: Client, thread: str) -> str:
    """": <root cause>" when the conversation failed (an unknown team, say), else ""."""
    handle = client.get_workflow_handle(thread)
    try:
        if (await handle.describe()).status != WorkflowExecutionStatus.FAILED:
            return ""
        await handle.result()
    except WorkflowFailureError as err:
        cause: BaseException = err.cause
        while cause.__cause__ is not None:
            cause = cause.__cause__
        return f": {getattr(cause, 'message', cause)}"
    except Exception:  # noqa: BLE001 - only an explanation: say nothing more
        pass
    return ""
