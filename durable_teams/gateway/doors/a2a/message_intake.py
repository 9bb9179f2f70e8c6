"""An A2A message taken by its thread: an answer to a task's question (the message names the
task), a turn of a context the caller names, or the first turn of a new context. The message's
`messageId` keys it: sent again, it is the same turn, nothing sent twice (the core's
idempotency, durable_teams/gateway/core/idempotency.py)."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Awaitable
from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationNotFound, QuestionClosed, TurnConflict
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.idempotency import (
    KeyedInput,
    KeyReused,
    content_id,
    input_taken,
    sent_keyed,
)
from durable_teams.gateway.core.outcomes import Waiter
from durable_teams.gateway.core.tenant_ids import shown, shown_task, visible_thread, workflow_id
from durable_teams.gateway.doors.a2a.reading import TaskReader
from durable_teams.gateway.doors.a2a.wire import text_of
from durable_teams.workflows.a2a_tasks import FINAL
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.turn_states import answered_by, answering

MESSAGE_ID_REUSED = "this messageId was sent with another message: use a new messageId"

Taken = tuple[str, int, Any]
"""(thread, turn, what waits for the turn's outcome)."""


class MessageIntake(TaskReader):
    """Taking one team's A2A messages into its threads (the door's SendMessage and
    SendStreamingMessage begin here)."""

    async def accept(self, params: pb.SendMessageRequest, scope: str | None,
                     user: str | None = None) -> Taken:
        """The message taken by its thread: (thread, turn, what waits for the turn's outcome).
        A new thread keeps the caller's `scope` (its tenant) and speaks for `user`."""
        message = params.message
        text = text_of(message)
        # the scope in the digest too: another scope's same messageId is another message
        digest = hashlib.sha256(f"{scope or ''}\n{message.message_id}".encode()).hexdigest()[:24]
        prefix = "a2a-" + digest if message.message_id else None
        turn_id = content_id(prefix, text) if prefix else None
        if message.task_id:  # an answer to the task's question
            return await self.answer(message, scope, text, prefix, turn_id)
        return await self.turn(message, scope, user, text, prefix, turn_id)

    async def answer(self, message: pb.Message, scope: str | None, text: str, prefix: str | None,
                     turn_id: str | None) -> Taken:
        """A message naming its task: the answer to the question that task waits on."""
        thread, number, described = await self.located(message.task_id, scope)
        if message.context_id and message.context_id != shown(scope, thread):  # as the SDK refuses it
            raise InvalidParamsError(f"context {message.context_id} does not match context {shown(scope, thread)} "
                                     f"of task {message.task_id}")
        if not await self.thread_of(thread, scope, described):
            raise UnsupportedOperationError(f"task {message.task_id} has ended")
        again = await self.sent_before(thread, prefix, text)
        if again is not None:
            return again
        status = await self.gateway.status(thread)
        if not answered_by(status, number):
            task = await self.task(thread, number, scope)
            state = pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_")
            if state in FINAL:
                raise UnsupportedOperationError(f"task {message.task_id} has ended ({state.lower()})")
            raise UnsupportedOperationError(f"task {message.task_id} is not waiting for input ({state.lower()})")
        try:
            waiter = await self.begin_keyed(thread, text, prefix, turn_id, seen=status)
        except (TurnConflict, QuestionClosed):  # another message answered it meanwhile
            raise UnsupportedOperationError(f"task {message.task_id} is not waiting for input: "
                                            "another message answered it") from None
        return thread, number, waiter

    async def turn(self, message: pb.Message, scope: str | None, user: str | None, text: str,
                   prefix: str | None, turn_id: str | None) -> Taken:
        """A message naming no task: a new turn of its context (the one it names, one named
        after its `messageId`, or a new one)."""
        seen: ConversationStatus | None = None
        context, known = await self.context_of(message.context_id, scope) if message.context_id else ("", None)
        if known is not None:
            thread = context
            if known != WorkflowExecutionStatus.RUNNING:
                raise UnsupportedOperationError(f"context {message.context_id} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
            seen = await self.gateway.status(thread)
            if seen.pending:
                raise InvalidParamsError(f"task {shown_task(scope, thread, answering(seen))} waits for input: "
                                         "send the answer with its taskId")
        elif prefix is not None and not message.context_id:  # a new context named after the message: a retry finds it
            thread = await self.named_after(prefix, scope)
            with contextlib.suppress(WorkflowAlreadyStartedError):  # by this message before, or its twin at once
                await self.gateway.start_thread(self.team, thread, scope=scope, user=user)
            if not await self.thread_of(thread, scope):  # another scope's (a digest's clash): as none
                raise UnsupportedOperationError(f"context {shown(scope, thread)} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
        else:  # a new context: the client's id for it, when it gave one, is the thread's (its tenant's own)
            thread = await self.new_thread(message.context_id or None, scope, user)
        waiter = await self.begin_keyed(thread, text, prefix, turn_id, seen=seen)
        number = waiter.turn or (await self.gateway.turn_of(thread, turn_id) if turn_id else None) or (
            await self.gateway.status(thread)).turns
        return thread, number, waiter

    async def context_of(self, context: str, scope: str | None) -> tuple[str, WorkflowExecutionStatus | None]:
        """The thread a message's `contextId` names and its run status, None when the caller
        sees none of that id (`TaskNotFoundError` for another team's): a tenant's contextId X is
        its thread <scope>:X, or one it made under X before (core/tenant_ids.py), one describe."""
        try:
            thread, described = await visible_thread(self.gateway, scope, context)
        except ConversationNotFound:
            return "", None
        except RPCError as err:  # an id Temporal refuses is no thread either
            if err.status != RPCStatusCode.INVALID_ARGUMENT:
                raise
            return "", None
        return thread, await self.workflow_status(thread, scope, described)

    async def named_after(self, prefix: str, scope: str | None) -> str:
        """The thread of a new context named after its first message's `messageId` (`prefix`),
        so that message sent again finds it: the caller's own, `<scope>:<team>-a2a-<digest>`
        (core/tenant_ids.py), unless an earlier release made it under the raw id (a retry of
        that message across an upgrade finds that one)."""
        raw = f"{team_part(self.team)}-a2a-{prefix[4:20]}"
        if scope is None:
            return raw
        try:
            await self.gateway.visible(raw, scope)
        except ConversationNotFound:
            return workflow_id(scope, raw)
        return raw

    async def begin_keyed(self, thread: str, text: str, prefix: str | None, turn_id: str | None,
                          seen: ConversationStatus | None) -> Waiter:
        """The message sent (as a turn, or the answer to the thread's question) under its
        `messageId`'s update (`prefix`): a message sent at once with another under the same
        messageId is one update, and the one whose input was not taken an error."""
        def send() -> Awaitable[Waiter]:
            return self.gateway.begin_exchange(thread, text, turn_id, seen=seen, update_key=prefix)
        if prefix is None or turn_id is None:
            return await send()
        try:
            return await sent_keyed(self.gateway.client, thread, KeyedInput(turn_id, None, prefix), send)
        except KeyReused:
            raise InvalidParamsError(MESSAGE_ID_REUSED) from None

    async def sent_before(self, thread: str, prefix: str | None, text: str) -> Taken | None:
        """A message whose `messageId` the thread took already: the same text is a retry (its
        turn and outcome, nothing sent again, however late), other text an error (a messageId
        stands for one message, as an Idempotency-Key for one request); None for a new one."""
        if prefix is None:
            return None
        try:
            keyed = await input_taken(self.gateway.client, thread, prefix, text)
        except KeyReused:
            raise InvalidParamsError(MESSAGE_ID_REUSED) from None
        if keyed.turn is None:
            return None
        waiter = await self.gateway.begin_exchange(thread, text, keyed.id, again=True, turn=keyed.turn)
        return thread, keyed.turn, waiter

    async def new_thread(self, wanted: str | None, scope: str | None, user: str | None = None) -> str:
        """A new context's thread: the `contextId` the client gave (checked), else one the
        gateway names."""
        if wanted is not None:
            try:
                checks.thread_id(wanted, "contextId")
            except checks.BadRequest as err:
                raise InvalidParamsError(str(err.detail)) from None
        try:
            thread = workflow_id(scope, wanted) if wanted is not None else None
            return await self.gateway.start_thread(self.team, thread, scope=scope, user=user)
        except WorkflowAlreadyStartedError:  # taken between the look and the start, or ended long ago
            raise InvalidParamsError(f"contextId {wanted} is taken: use another") from None
