"""A served team as an A2A agent (spec 1.0, the `a2a-sdk` 1.x server's JSON-RPC binding):

    GET  /a2a/{team}/.well-known/agent-card.json   its card (skills: the team's agents)
    POST /a2a/{team}                               JSON-RPC: SendMessage, SendStreamingMessage,
                                                   GetTask, CancelTask, SubscribeToTask, ListTasks

(routes: routes.py; the protocol's objects: wire.py).

`contextId` is the thread, a task is one turn of it (durable_teams/gateway/core/turn_tasks.py). A
question or an approval puts the task in `input-required` with the question as its status
message; a message carrying the task's id answers it (an approval read strictly: a yes or a
no, anything else asks again). Every state is read from the workflow when asked, so a task
survives a restart of the gateway and of the workers. Cancel cancels the task's turn (the
workflow's `cancel_turn`: its activities and tools are told, a question it waits on is
withdrawn); the thread goes on and takes the next message as a new task.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.refusals import QuestionClosed, TurnConflict
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.exchanges import Waiter
from durable_teams.gateway.core.idempotency import (
    KeyedInput,
    KeyReused,
    content_id,
    input_taken,
    sent_keyed,
)
from durable_teams.gateway.core.turn_tasks import NotATask, parse_task_id, task_id
from durable_teams.gateway.doors.a2a.push_configs import PushConfigs, PushOptions
from durable_teams.gateway.doors.a2a.reading import TaskReader
from durable_teams.gateway.doors.a2a.wire import (
    PAUSED,
    history_wanted,
    scope_in,
    state_of,
    text_of,
    user_in,
)
from durable_teams.workflows.a2a_tasks import FINAL
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationStatus
from durable_teams.workflows.turn_states import answered_by, answering

MESSAGE_ID_REUSED = "this messageId was sent with another message: use a new messageId"


@dataclass
class A2ADoor(TaskReader, RequestHandler):
    """One team's A2A requests, answered from its threads (reading them: `TaskReader`)."""

    wait_seconds: float = 300.0
    """How long SendMessage waits for the turn to end or ask before it returns the task working."""
    push: PushOptions = field(default_factory=PushOptions)
    """The operator's choices for push notifications (private addresses, retries, polling)."""

    def __post_init__(self) -> None:
        self.pushes = PushConfigs(self.gateway, self.push)

    async def accept(self, params: pb.SendMessageRequest, scope: str | None,
                     user: str | None = None) -> tuple[str, int, Any]:
        """The message taken by its thread: (thread, turn, what waits for the turn's outcome).
        A new thread keeps the caller's `scope` (its tenant) and speaks for `user`."""
        message = params.message
        text = text_of(message)
        # the scope in the digest too: another scope's same messageId is another message
        digest = hashlib.sha256(f"{scope or ''}\n{message.message_id}".encode()).hexdigest()[:24]
        prefix = "a2a-" + digest if message.message_id else None
        turn_id = content_id(prefix, text) if prefix else None
        if message.task_id:  # an answer to the task's question
            try:
                thread, number = parse_task_id(message.task_id)
            except NotATask as err:
                raise TaskNotFoundError(str(err)) from None
            if message.context_id and message.context_id != thread:  # as the SDK's handler refuses it
                raise InvalidParamsError(f"context {message.context_id} does not match context {thread} "
                                         f"of task {message.task_id}")
            if not await self.thread_of(thread, scope):
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
        seen: ConversationStatus | None = None
        known = await self.known_status(message.context_id, scope) if message.context_id else None
        if known is not None:
            thread = message.context_id
            if known != WorkflowExecutionStatus.RUNNING:
                raise UnsupportedOperationError(f"context {thread} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
            seen = await self.gateway.status(thread)
            if seen.pending:
                raise InvalidParamsError(f"task {task_id(thread, answering(seen))} waits for input: "
                                         "send the answer with its taskId")
        elif prefix is not None and not message.context_id:  # a new context named after the message: a retry finds it
            thread = f"{team_part(self.team)}-a2a-{prefix[4:20]}"
            with contextlib.suppress(WorkflowAlreadyStartedError):  # by this message before, or its twin at once
                await self.gateway.start_thread(self.team, thread, scope=scope, user=user)
            if not await self.thread_of(thread, scope):  # another scope's (a digest's clash): as none
                raise UnsupportedOperationError(f"context {thread} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
        else:  # a new context: the client's id for it, when it gave one, is the thread's
            thread = await self.new_thread(message.context_id or None, scope, user)
        waiter = await self.begin_keyed(thread, text, prefix, turn_id, seen=seen)
        number = waiter.turn or (await self.gateway.turn_of(thread, turn_id) if turn_id else None) or (
            await self.gateway.status(thread)).turns
        return thread, number, waiter

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

    async def sent_before(self, thread: str, prefix: str | None, text: str) -> tuple[str, int, Any] | None:
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
        if wanted is not None:
            try:
                checks.thread_id(wanted, "contextId")
            except checks.BadRequest as err:
                raise InvalidParamsError(str(err.detail)) from None
        try:
            return await self.gateway.start_thread(self.team, wanted, scope=scope, user=user)
        except WorkflowAlreadyStartedError:  # taken between the look and the start, or ended long ago
            raise InvalidParamsError(f"contextId {wanted} is taken: use another") from None

    async def on_message_send(self, params: pb.SendMessageRequest, context: ServerCallContext) -> pb.Task:
        scope = scope_in(context)
        history = history_wanted(params.configuration)  # checked before the message goes in
        if params.configuration.HasField("task_push_notification_config"):
            await self.pushes.check(params.configuration.task_push_notification_config)
        thread, number, waiter = await self.accept(params, scope, user_in(context))
        if params.configuration.HasField("task_push_notification_config"):
            await self.with_push(thread, number, scope, params.configuration.task_push_notification_config)
        if not params.configuration.return_immediately:
            try:
                await asyncio.wait_for(waiter(), self.wait_seconds)
            except TimeoutError:
                pass  # still working: the task says so, tasks/get follows it
        return await self.task(thread, number, scope, history)

    async def with_push(self, thread: str, number: int, scope: str | None,
                        config: pb.TaskPushNotificationConfig) -> None:
        """The push config a message carried, set on its task (the message is in already)."""
        pushed = pb.TaskPushNotificationConfig()
        pushed.CopyFrom(config)
        task = await self.task(thread, number, scope)
        pushed.task_id = task.id
        await self.pushes.set(task.id, thread, number, state_of(task), pushed, fresh=True)

    async def on_message_send_stream(self, params: pb.SendMessageRequest, context: ServerCallContext
                                     ) -> AsyncGenerator[Event]:
        scope = scope_in(context)
        pushed = params.configuration.HasField("task_push_notification_config")
        if pushed:  # checked before the message goes in
            await self.pushes.check(params.configuration.task_push_notification_config)
        thread, number, _ = await self.accept(params, scope, user_in(context))
        if pushed:
            await self.with_push(thread, number, scope, params.configuration.task_push_notification_config)
        async for event in self.updates(thread, number, scope):
            yield event

    async def on_subscribe_to_task(self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
                                   ) -> AsyncGenerator[Event]:
        thread, number = self.parsed(params.id)
        scope = scope_in(context)
        first = await self.task(thread, number, scope)
        if pb.TaskState.Name(first.status.state).removeprefix("TASK_STATE_") in FINAL:
            raise UnsupportedOperationError(f"task {params.id} has ended")
        async for event in self.updates(thread, number, scope):
            yield event

    async def updates(self, thread: str, number: int, scope: str | None) -> AsyncGenerator[Event]:
        """The task, then each change of its status, until it ends or waits for input: read
        again when the core says it may have changed (`turn_changes`: at the outcome of the
        turn it waits behind while submitted, then at its own)."""
        task = await self.task(thread, number, scope)
        yield task
        seen = (task.status.state, task.status.message.SerializeToString())
        while (state := name_of(task)) not in FINAL | PAUSED:
            behind = state == "SUBMITTED" and number > 1  # it works once the turn before ends
            moved = False
            async with aclosing(self.gateway.turn_changes(thread, number - 1 if behind else number,
                                                          None if behind else set())) as changes:
                async for _ in changes:
                    task = await self.task(thread, number, scope)
                    now = (task.status.state, task.status.message.SerializeToString())
                    if now != seen:
                        seen = now
                        yield pb.TaskStatusUpdateEvent(task_id=task.id, context_id=thread, status=task.status)
                    if name_of(task) != state:
                        moved = True
                        break
            if not moved:  # the thread stopped running: its last state is said (above), nothing more comes
                return

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        return await self.task(*self.parsed(params.id), scope_in(context), history_wanted(params))

    async def on_cancel_task(self, params: pb.CancelTaskRequest, context: ServerCallContext) -> pb.Task | None:
        thread, number = self.parsed(params.id)
        scope = scope_in(context)
        task = await self.task(thread, number, scope)
        if pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") in FINAL:
            raise TaskNotCancelableError(f"task {params.id} has ended")
        try:
            await self.gateway.client.get_workflow_handle(thread).execute_update(TeamWorkflow.cancel_turn, number)
        except WorkflowUpdateFailedError as err:  # ended meanwhile, or a worker without cancel_turn
            task = await self.task(thread, number, scope)
            if pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") not in FINAL:
                raise TaskNotCancelableError(
                    f"task {params.id} cannot be cancelled: {getattr(err.cause, 'message', err)}") from None
            return task
        # the turn ends "cancelled" once the workflow has stopped it: its outcome says when
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.gateway.busy_seconds), \
                    aclosing(self.gateway.turn_changes(thread, number)) as changes:
                async for _ in changes:
                    task = await self.task(thread, number, scope)
                    if name_of(task) in FINAL:
                        return task
        return await self.task(thread, number, scope)

    async def on_list_tasks(self, params: pb.ListTasksRequest, context: ServerCallContext) -> pb.ListTasksResponse:
        return await self.list_tasks(params, scope_in(context))

    async def on_create_task_push_notification_config(self, params: pb.TaskPushNotificationConfig,
                                                      context: ServerCallContext) -> pb.TaskPushNotificationConfig:
        thread, number = self.parsed(params.task_id)
        task = await self.task(thread, number, scope_in(context))
        return await self.pushes.set(task.id, thread, number, state_of(task), params)

    async def on_get_task_push_notification_config(self, params: pb.GetTaskPushNotificationConfigRequest,
                                                   context: ServerCallContext) -> pb.TaskPushNotificationConfig:
        await self.task(*self.parsed(params.task_id), scope_in(context))
        return await self.pushes.get(params.task_id, params.id)

    async def on_list_task_push_notification_configs(self, params: pb.ListTaskPushNotificationConfigsRequest,
                                                     context: ServerCallContext
                                                     ) -> pb.ListTaskPushNotificationConfigsResponse:
        await self.task(*self.parsed(params.task_id), scope_in(context))
        return pb.ListTaskPushNotificationConfigsResponse(configs=await self.pushes.listed(params.task_id))

    async def on_delete_task_push_notification_config(self, params: pb.DeleteTaskPushNotificationConfigRequest,
                                                      context: ServerCallContext) -> None:
        await self.task(*self.parsed(params.task_id), scope_in(context))
        await self.pushes.delete(params.task_id, params.id)

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> pb.AgentCard:
        raise UnsupportedOperationError("no extended agent card")


def name_of(task: pb.Task) -> str:
    """The task's state, in A2A's words without the prefix (WORKING, COMPLETED, ...)."""
    return pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_")
