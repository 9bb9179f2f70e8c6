"""Reading one team's A2A tasks from its threads, as a caller's scope sees them: a task (a
turn) from the workflow's status, a thread's run state, and the listing from Temporal's
visibility store. Another team's or another scope's thread is `TaskNotFoundError`, the same
as none (durable_teams/gateway/core/scopes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from temporalio.client import WorkflowExecutionDescription as Described
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.scopes import sees
from durable_teams.gateway.core.tenant_ids import found as found_thread
from durable_teams.gateway.core.tenant_ids import shown, shown_task, visible_thread
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.core.turn_tasks import NotATask, parse_task_id
from durable_teams.gateway.doors.a2a.wire import as_task, history_of, history_wanted
from durable_teams.workflows.a2a_tasks import TaskState, a2a_state
from durable_teams.workflows.turn_states import answering, ended_state, turn_state

MAX_LISTED = 100
MAX_SCANNED = 1000
"""Threads read from the visibility store for one listing (their memos only)."""
MAX_HISTORY = 200
"""The log messages of one turn read for its history (a turn's working can be long)."""


@dataclass
class TaskReader:
    """One team's tasks read from its threads, as a caller of a scope sees them (`gateway`: the
    client and polling)."""

    gateway: Gateway
    team: str

    async def thread_of(self, thread: str, scope: str | None, described: Described | None = None) -> bool:
        """True while the thread runs, False once ended; `TaskNotFoundError` when it is not this
        team's, or not one a caller of `scope` sees (`described`: as a caller's check read it)."""
        return await self.workflow_status(thread, scope, described) == WorkflowExecutionStatus.RUNNING

    async def workflow_status(self, thread: str, scope: str | None,
                              described: Described | None = None) -> WorkflowExecutionStatus | None:
        """The thread's run status; `TaskNotFoundError`, the same as for no thread, for another
        scope's thread (durable_teams/gateway/core/scopes.py) or another team's. `described`:
        the thread as described already, visible to the caller (`located`: no second describe)."""
        with no_context(shown(scope, thread)):
            described = described or await self.gateway.visible(thread, scope)
        if (await described.memo()).get("team") != self.team:
            raise TaskNotFoundError(f"no context {shown(scope, thread)[:80]!r} for {self.team}")
        return described.status

    async def task(self, thread: str, number: int, scope: str | None, history: int | None = 0,
                   described: Described | None = None) -> pb.Task:
        """Turn `number` of `thread` as a task, read from the workflow now, with the latest
        `history` messages of its history (None: all it keeps, up to `MAX_HISTORY`; `described`:
        the thread as `located` just described it)."""
        ended = await self.workflow_status(thread, scope, described)
        running = ended == WorkflowExecutionStatus.RUNNING
        cancelled = ended in (WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED)
        try:
            status = await self.gateway.status(thread)
        except Exception:  # noqa: BLE001 - an ended thread no worker can read: its end is the state
            if running:
                raise
            return named(as_task(thread, number, TaskState("CANCELED" if cancelled else "FAILED",
                                                           "the conversation has ended")), scope)
        if number > max(status.turns, 1):
            raise TaskNotFoundError(f"no task {shown_task(scope, thread, number)}")
        last = status.last_reply
        reply = None
        if last is not None and last.turn >= number:
            reply = last if last.turn == number else await self.gateway.reply_of(thread, number, last)
        task = as_task(thread, number, a2a_state(ended_state(turn_state(status, number, reply, running), running, cancelled)))
        if history != 0:
            log = await self.gateway.turn_messages(thread, number, answering(status), MAX_HISTORY)
            said = history_of(thread, number, log)
            task.history.extend(said[-history:] if history else said)
        return named(task, scope)

    async def known(self, thread: str, scope: str | None) -> bool:
        """Whether `thread` is a thread of this team's that a caller of `scope` sees
        (`TaskNotFoundError` for another team's)."""
        return await self.known_status(thread, scope) is not None

    async def known_status(self, thread: str, scope: str | None) -> WorkflowExecutionStatus | None:
        """`thread`'s run status when it is a thread of this team's that a caller of `scope`
        sees, else None (`TaskNotFoundError` for another team's): one description read."""
        try:
            return await self.workflow_status(thread, scope)
        except TaskNotFoundError:
            try:  # none, or another scope's (its id is taken all the same): None; another team's: raised
                await self.gateway.visible(thread, scope)
            except ConversationNotFound:
                return None
            except RPCError as err:
                if err.status == RPCStatusCode.INVALID_ARGUMENT:
                    return None
                raise
            raise

    async def located(self, value: str, scope: str | None) -> tuple[str, int, Described]:
        """(workflow, turn, the workflow described) of the task a caller of `scope` names and
        sees (its own id for the thread, one describe: core/tenant_ids.py); `TaskNotFoundError`
        for an id no task has, or none the caller sees."""
        try:
            thread, number = parse_task_id(value)
        except NotATask as err:
            raise TaskNotFoundError(str(err)) from None
        with no_context(thread):
            workflow, described = await visible_thread(self.gateway, scope, thread)
        return workflow, number, described

    async def list_tasks(self, params: pb.ListTasksRequest, scope: str | None) -> pb.ListTasksResponse:
        """Each thread's latest task (a context's every task when `contextId` is given), newest
        threads first, from Temporal's visibility store (the latest `MAX_SCANNED` threads of
        the gateway's queue); a scoped caller's only. A page at a time (`nextPageToken`: an
        offset); a task's history only with `historyLength`, its artifacts only with
        `includeArtifacts`. A `status` filter keeps the page's tasks in that state."""
        if params.HasField("page_size") and not 1 <= params.page_size <= MAX_LISTED:
            raise InvalidParamsError(f"pageSize must be 1 to {MAX_LISTED}")
        limit = params.page_size if params.HasField("page_size") else 50
        offset = page_offset(params.page_token)
        history = history_wanted(params) or 0  # not given: none (each would cost a read of the log)
        if params.context_id:
            context = await found_thread(self.gateway, scope, params.context_id)
            try:
                if not await self.known(context, scope):
                    return pb.ListTasksResponse(page_size=0)
            except TaskNotFoundError:  # another team's or scope's: as none
                return pb.ListTasksResponse(page_size=0)
            status = await self.gateway.status(context)
            found = [(context, n) for n in range(max(status.turns, 1), 0, -1)]
        else:
            found = [(thread, 0) for thread in await self.threads(scope)]
        tasks = []
        for thread, number in found[offset:offset + limit]:
            try:
                if not number:  # a thread's latest task
                    number = max((await self.gateway.status(thread)).turns, 1)
                tasks.append(await self.task(thread, number, scope, history))
            except Exception:  # noqa: BLE001 - one unreadable thread hides no other
                continue
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        if not params.include_artifacts:
            for task in tasks:
                task.ClearField("artifacts")
        more = offset + limit < len(found)
        return pb.ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(found),
                                    next_page_token=f"{TOKEN_PREFIX}{offset + limit}" if more else "")

    async def threads(self, scope: str | None) -> list[str]:
        """This team's threads a caller of `scope` sees, newest first, from the visibility
        store (the gateway's queue only: another queue's threads are not served here)."""
        queue = self.gateway.task_queue.replace("\\", "\\\\").replace("'", "\\'")
        query = f"WorkflowType = 'TeamWorkflow' AND TaskQueue = '{queue}'"
        found = []
        async for wf in self.gateway.client.list_workflows(query, limit=MAX_SCANNED):
            try:
                memo = await wf.memo()
            except Exception:  # noqa: BLE001 - a memo this gateway cannot read is no scope's
                continue
            if memo.get("team") == self.team and sees(scope, memo):
                found.append(wf.id)
        return found


def named(task: pb.Task, scope: str | None) -> pb.Task:
    """The task with its `contextId`, its id and its messages' ids by the caller's own id for
    its thread (a tenant's contextId X is the thread `<scope>:X`, its task `X::n`:
    core/tenant_ids.py)."""
    workflow = task.context_id
    context = shown(scope, workflow)
    if context == workflow:
        return task
    task.id = renamed(task.id, workflow, context)
    task.context_id = context
    messages = [*task.history, *([task.status.message] if task.status.HasField("message") else [])]
    for message in messages:
        message.context_id = context
        message.task_id = renamed(message.task_id, workflow, context)
        message.message_id = renamed(message.message_id, workflow, context)
    return task


def renamed(value: str, workflow: str, context: str) -> str:
    """An id the gateway derived from the thread's (a task's, a message's) by the caller's id."""
    return context + value[len(workflow):] if value.startswith(f"{workflow}::") else value


TOKEN_PREFIX = "offset-"


def page_offset(token: str) -> int:
    """Where a page token says the page starts; `InvalidParamsError` for one not given here."""
    if not token:
        return 0
    digits = token.removeprefix(TOKEN_PREFIX)
    if not token.startswith(TOKEN_PREFIX) or not digits.isdigit() or len(digits) > 6:
        raise InvalidParamsError("no such pageToken")
    return int(digits)


@contextmanager
def no_context(name: str) -> Iterator[None]:
    """A thread the caller cannot see, or an id Temporal refuses, is A2A's "no such task"
    (`TaskNotFoundError` naming `name`, the caller's own id for it)."""
    try:
        yield
    except ConversationNotFound:
        raise TaskNotFoundError(f"no context {name[:80]!r}") from None
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            raise TaskNotFoundError(f"no context {name[:80]!r}") from None
        raise
