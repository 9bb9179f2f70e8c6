"""MCP tasks over conversations: a task is one turn of a thread, its id `<thread>::<turn>` (as
A2A's), and its state is read from the workflow at each request, so any gateway process, after
any restart, serves `tasks/get`, `tasks/update`, `tasks/result` and `tasks/cancel` for it.

Two forms of the same task:

- the tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28): a `tools/call` from a
  client that declares the extension in its request's capabilities returns
  `{"resultType": "task", "taskId", "status", ...}`; `tasks/get` inlines the `result`, or
  the `inputRequests` of a question; `tasks/update` carries the person's `inputResponses`;
- the experimental tasks of MCP 2025-11-25: a `tools/call` with a `task` field returns
  `{"task": {...}}`; `tasks/result` waits for the outcome; `tasks/list` lists them.

A question (`ask_human`, an approval) makes the task `input_required`; cancelling it is the
workflow's `cancel_turn` (the turn's activities and tools are told).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from temporalio.client import (
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationBusy, ConversationNotFound, TurnConflict
from durable_teams.client.send import submit_turn
from durable_teams.gateway.core.scopes import sees
from durable_teams.gateway.core.tenant_ids import shown, shown_task, visible_thread
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.core.turn_tasks import NotATask, parse_task_id
from durable_teams.gateway.doors.mcp.forms import answer_text
from durable_teams.gateway.doors.mcp.task_pages import PAGE, Cursor, page_of
from durable_teams.gateway.doors.mcp.task_wire import (
    TERMINAL,
    TaskView,
    from_memo,
    no_task,
    view_of,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus, TurnOutcome
from durable_teams.workflows.turn_states import TurnState, answering, replied_state, turn_state

LIST_READ_SECONDS = 2.0


@dataclass
class McpTasks:
    """The tasks of `gateway`'s threads of `teams` (a caller sees its scope's, an operator all)."""

    gateway: Gateway
    teams: list[str]
    poll_ms: int = 1000
    wait_seconds: float = 300.0
    """How long `tasks/result` waits for an outcome before it answers with the task working."""
    read_seconds: float = 2.0
    """How long a read waits for a worker to answer the status query before it answers from
    the thread's memo (its open questions: no worker needed)."""
    page_size: int = PAGE
    """Threads a `tasks/list` page lists."""

    async def submit(self, thread: str, message: str | None, scope: str | None) -> tuple[str, bool]:
        """`message` sent to the thread as a turn, or as the answer to its open question (none:
        the turn in flight); its task id as a caller of `scope` names it, once the workflow has
        it (a `tasks/get` finds it), and whether it is a new turn."""
        status = await self.gateway.status(thread)
        if message is None:
            return shown_task(scope, thread, max(answering(status), 1)), False
        if status.pending:
            await self.gateway.begin_exchange(thread, message, seen=status)
            return shown_task(scope, thread, answering(status)), False
        accepted = await submit_turn(self.gateway.client, thread, message, busy_timeout=self.gateway.busy_seconds)
        return shown_task(scope, thread, accepted.number), True

    async def submitted(self, thread: str, message: str | None, scope: str | None,
                        described: WorkflowExecutionDescription | None) -> TaskView:
        """The task `message` makes (`submit`), as it stands once the workflow has it: a new
        turn on a thread `described` running (as read to check the caller's right to it) is
        working (queued behind another, or begun: "working" either way), no read needed; else read."""
        task, new_turn = await self.submit(thread, message, scope)
        if not new_turn or described is None:
            return await self.read(task, scope)
        created = described.start_time or datetime.now(UTC)
        return view_of(task, thread, TurnState("working"), None, created, datetime.now(UTC), self.poll_ms,
                       shown(scope, thread))

    async def located(self, task: str, scope: str | None) -> tuple[str, int, WorkflowExecutionDescription]:
        """(workflow, turn, the workflow described) of the task a caller of `scope` names and
        sees (its own id for the thread, one describe: core/tenant_ids.py)."""
        try:
            thread, number = parse_task_id(task)
            workflow, described = await visible_thread(self.gateway, scope, thread)
        except (NotATask, ConversationNotFound):
            raise no_task(task) from None
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise no_task(task) from None
            raise
        return workflow, number, described

    async def described(self, thread: str, scope: str | None, task: str,
                        described: WorkflowExecutionDescription | None = None
                        ) -> tuple[WorkflowExecutionDescription, Mapping[str, Any]]:
        """The thread described (`described`: as `located` read it), its memo, if it is a task's
        of these teams that a caller of `scope` sees; else `no_task`."""
        try:
            described = described or await self.gateway.visible(thread, scope)
        except ConversationNotFound:
            raise no_task(task) from None
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise no_task(task) from None
            raise
        memo = await described.memo()
        if memo.get("team") not in self.teams or not sees(scope, memo):
            raise no_task(task)
        return described, memo

    async def read(self, task: str, scope: str | None) -> TaskView:
        """The task now (`MCPError` invalid params for a task this caller cannot see)."""
        thread, number, described = await self.located(task, scope)
        return await self.view(task, thread, number, scope, described)

    async def view(self, task: str, thread: str, number: int, scope: str | None,
                   seen: WorkflowExecutionDescription | None = None) -> TaskView:
        """Turn `number` of the workflow `thread` now, the task a caller of `scope` names `task`
        (`seen`: the workflow as just described)."""
        described, memo = await self.described(thread, scope, task, seen)
        running = described.status == WorkflowExecutionStatus.RUNNING
        cancelled = described.status in (WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED)
        ended = TurnState("cancelled" if cancelled else "failed", "the conversation has ended")
        status: ConversationStatus | None = None
        try:
            status = await asyncio.wait_for(self.gateway.status(thread), self.read_seconds)
        except Exception as err:  # noqa: BLE001 - an ended thread no worker can read: its end is the state
            if running and not isinstance(err, TimeoutError):
                raise
        found, question = ended, None
        if status is None and running:  # no worker answers now: what the memo says
            found, question = from_memo(memo)
        if status is not None:
            if number > max(status.turns, 1):
                raise no_task(task)
            last, reply = status.last_reply, None
            if last is not None and last.turn >= number:
                reply = last if last.turn == number else await self.gateway.reply_of(thread, number, last)
            found = turn_state(status, number, reply, running)
            if not running and found.state not in ("completed", "failed") or cancelled and found.state == "failed":
                found = ended
            question = status.pending[0] if found.state == "waiting" and status.pending else None
        created = described.start_time or datetime.now(UTC)
        updated = described.close_time or datetime.now(UTC)
        return view_of(task, thread, found, question, created, updated, self.poll_ms, shown(scope, thread))

    async def update(self, task: str, responses: Mapping[str, Any], scope: str | None) -> TaskView:
        """The answers to the task's open question taken (others ignored, as the spec asks)."""
        view = await self.read(task, scope)
        q = view.question
        if q is None or q.question_id not in responses:
            return view
        text = answer_text(responses[q.question_id], q)
        if text is None:  # declined or cancelled: the question stays open
            return view
        try:
            status = await asyncio.wait_for(self.gateway.status(view.thread), self.gateway.busy_seconds)
            if any(p.question_id == q.question_id for p in status.pending):
                await self.gateway.begin_exchange(view.thread, text, seen=status)
        except TurnConflict:  # answered elsewhere since
            pass
        except (TimeoutError, ConversationBusy):
            raise MCPError(types.INTERNAL_ERROR, f"no worker took the answer to {task[:80]!r} within "
                           f"{self.gateway.busy_seconds:g} s; it may still be applied when one does: "
                           "check the task before answering again") from None
        return await self.read(task, scope)

    async def cancel(self, task: str, scope: str | None) -> TaskView:
        """The workflow's `cancel_turn` for the task's turn; the task once it has ended (or as it
        is after `busy_seconds`: cancelling is cooperative)."""
        view = await self.read(task, scope)
        if view.terminal:
            raise MCPError(types.INVALID_PARAMS, f"task {task[:80]!r} has ended ({view.status}): nothing to cancel")
        _, number = parse_task_id(task)
        try:
            await self.gateway.client.get_workflow_handle(view.thread).execute_update(TeamWorkflow.cancel_turn, number)
        except WorkflowUpdateFailedError as err:  # ended meanwhile, or a worker without cancel_turn
            view = await self.read(task, scope)
            if not view.terminal:
                raise MCPError(types.INVALID_PARAMS, f"task {task[:80]!r} cannot be cancelled: "
                               f"{getattr(err.cause, 'message', err)}") from None
            return view
        return await self.settled(task, scope, self.gateway.busy_seconds, until=TERMINAL)

    async def settled(self, task: str, scope: str | None, within: float | None = None,
                      until: frozenset[str] = TERMINAL | {"input_required"}) -> TaskView:
        """The task once its status is in `until`, or as it is after `within` seconds: read
        when the core says its turn may stand otherwise (`turn_changes`: at once when it is
        settled already), once the caller is known to see it."""
        thread, number, described = await self.located(task, scope)
        described, _ = await self.described(thread, scope, task, described)  # nobody waits on a task they cannot see
        asked: set[str] | None = set() if "input_required" in until else None  # a question settles it, or the reply alone
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.wait_seconds if within is None else within), \
                    aclosing(self.gateway.turn_changes(thread, number, asked)) as changes:
                async for told in changes:
                    # the reply the update told, as a read would show it (no read); else read
                    view = self.replied(task, thread, number, scope, described, told) or await self.read(task, scope)
                    if view.status in until:
                        return view
        return await self.read(task, scope)

    def replied(self, task: str, thread: str, number: int, scope: str | None,
                described: WorkflowExecutionDescription, told: TurnOutcome | None) -> TaskView | None:
        """Task `task` (turn `number` of the workflow `thread`, as a caller of `scope` names it)
        as its turn's reply (`told` by the `turn_outcome` update) settled it, on a thread
        `described` running (as it was when the caller's right to it was checked); None when
        `told` is no reply of its turn."""
        if told is None or told.reply is None or told.reply.turn != number:
            return None
        if described.status != WorkflowExecutionStatus.RUNNING:
            return None  # an ended thread's task: read (how it ended says the state)
        created = described.start_time or datetime.now(UTC)
        return view_of(task, thread, replied_state(told.reply), None, created, datetime.now(UTC), self.poll_ms,
                       shown(scope, thread))

    async def listed(self, scope: str | None, cursor: str | None = None) -> tuple[list[TaskView], str | None]:
        """A page of each visible thread's latest task (Temporal's visibility order: running
        threads first; durable_teams/gateway/doors/mcp/task_pages.py), and the next page's cursor
        (`BadCursor` for one not made here). A thread whose memo this gateway cannot decode (an
        encrypted conversation, without the key) is left out, and one no worker answers for
        within `LIST_READ_SECONDS`: one stuck thread delays the list, never stalls it."""
        queue = self.gateway.task_queue.replace("\\", "\\\\").replace("'", "\\'")
        query = f"WorkflowType = 'TeamWorkflow' AND TaskQueue = '{queue}'"

        async def keep(wf: WorkflowExecution) -> bool:
            try:
                memo = await wf.memo()
            except Exception:  # noqa: BLE001 - a memo this gateway cannot decode (encrypted): not listed
                return False
            return memo.get("team") in self.teams and sees(scope, memo)
        threads, after = await page_of(self.gateway.client, query, keep, Cursor.decode(cursor) if cursor else None,
                                       self.page_size)

        async def latest(thread: str) -> TaskView:
            status = await self.gateway.status(thread)
            number = max(status.turns, 1)
            return await self.view(shown_task(scope, thread, number), thread, number, scope)
        found = await asyncio.gather(*(asyncio.wait_for(latest(t), LIST_READ_SECONDS) for t in threads),
                                     return_exceptions=True)
        return [view for view in found if isinstance(view, TaskView)], after.encode() if after else None
