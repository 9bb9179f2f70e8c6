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
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotCancelableError, UnsupportedOperationError
from temporalio.client import WorkflowUpdateFailedError

from durable_teams.gateway.core.turn_tasks import task_id
from durable_teams.gateway.doors.a2a.message_intake import MessageIntake
from durable_teams.gateway.doors.a2a.own_words import in_callers_words
from durable_teams.gateway.doors.a2a.push_configs import PushConfigs, PushOptions
from durable_teams.gateway.doors.a2a.wire import PAUSED, history_wanted, scope_in, user_in
from durable_teams.workflows.a2a_tasks import FINAL
from durable_teams.workflows.conversation import TeamWorkflow


@in_callers_words
@dataclass
class A2ADoor(MessageIntake, RequestHandler):
    """One team's A2A requests, answered from its threads (taking messages into them:
    `MessageIntake`; reading them: `TaskReader`)."""

    wait_seconds: float = 300.0
    """How long SendMessage waits for the turn to end or ask before it returns the task working."""
    push: PushOptions = field(default_factory=PushOptions)
    """The operator's choices for push notifications (private addresses, retries, polling)."""

    def __post_init__(self) -> None:
        self.pushes = PushConfigs(self.gateway, self.push)

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
        await self.pushes.set(thread, number, task, pushed, fresh=True)

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
        scope = scope_in(context)
        thread, number, described = await self.located(params.id, scope)
        first = await self.task(thread, number, scope, described=described)
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
                        yield pb.TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
                    if name_of(task) != state:
                        moved = True
                        break
            if not moved:  # the thread stopped running: its last state is said (above), nothing more comes
                return

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        scope = scope_in(context)
        thread, number, described = await self.located(params.id, scope)
        return await self.task(thread, number, scope, history_wanted(params), described)

    async def on_cancel_task(self, params: pb.CancelTaskRequest, context: ServerCallContext) -> pb.Task | None:
        scope = scope_in(context)
        thread, number, described = await self.located(params.id, scope)
        task = await self.task(thread, number, scope, described=described)
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
        scope = scope_in(context)
        thread, number, described = await self.located(params.task_id, scope)
        return await self.pushes.set(thread, number, await self.task(thread, number, scope, described=described),
                                     params)

    async def on_get_task_push_notification_config(self, params: pb.GetTaskPushNotificationConfigRequest,
                                                   context: ServerCallContext) -> pb.TaskPushNotificationConfig:
        return await self.pushes.get(await self.seen_task(params.task_id, context), params.task_id, params.id)

    async def on_list_task_push_notification_configs(self, params: pb.ListTaskPushNotificationConfigsRequest,
                                                     context: ServerCallContext
                                                     ) -> pb.ListTaskPushNotificationConfigsResponse:
        configs = await self.pushes.listed(await self.seen_task(params.task_id, context), params.task_id)
        return pb.ListTaskPushNotificationConfigsResponse(configs=configs)

    async def on_delete_task_push_notification_config(self, params: pb.DeleteTaskPushNotificationConfigRequest,
                                                      context: ServerCallContext) -> None:
        await self.pushes.delete(await self.seen_task(params.task_id, context), params.task_id, params.id)

    async def seen_task(self, task: str, context: ServerCallContext) -> str:
        """The workflow-form id of a task the caller names and sees (what its push workflow is
        named after: push_configs.py); `TaskNotFoundError` for one it cannot see."""
        thread, number, described = await self.located(task, scope_in(context))
        await self.task(thread, number, scope_in(context), described=described)
        return task_id(thread, number)

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> pb.AgentCard:
        raise UnsupportedOperationError("no extended agent card")


def name_of(task: pb.Task) -> str:
    """The task's state, in A2A's words without the prefix (WORKING, COMPLETED, ...)."""
    return pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_")
