"""A served team as an A2A agent (spec 1.0, the `a2a-sdk` 1.x server's JSON-RPC binding):

    GET  /a2a/{team}/.well-known/agent-card.json   its card (skills: the team's agents)
    POST /a2a/{team}                               JSON-RPC: SendMessage, SendStreamingMessage,
                                                   GetTask, CancelTask, SubscribeToTask, ListTasks

`contextId` is the thread, a task is one turn of it (durable_teams/gateway/a2a_tasks.py). A
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
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway import requests as checks
from durable_teams.gateway.a2a_tasks import (
    NotATask,
    TurnState,
    answered_by,
    parse_task_id,
    task_id,
    turn_state,
)
from durable_teams.gateway.keyed import KeyReused, content_id, keyed_input
from durable_teams.gateway.team_cards import TeamCard
from durable_teams.gateway.threads import Gateway, answering
from durable_teams.workflows.state import ConversationStatus

FINAL = {"COMPLETED", "FAILED", "CANCELED", "REJECTED"}
PAUSED = {"INPUT_REQUIRED", "AUTH_REQUIRED"}
MAX_LISTED = 100


def text_of(message: pb.Message) -> str:
    """The text parts of a message, joined; `InvalidParamsError` when there is none."""
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    if len(texts) != len(message.parts):
        raise InvalidParamsError("only text parts are understood here")
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError("the message has no text")
    return text


def agent_message(thread: str, number: int, text: str) -> pb.Message:
    return pb.Message(message_id=f"{task_id(thread, number)}-{abs(hash(text)) % 10**8}", context_id=thread,
                      task_id=task_id(thread, number), role=pb.ROLE_AGENT, parts=[pb.Part(text=text)])


def as_task(thread: str, number: int, found: TurnState) -> pb.Task:
    status = pb.TaskStatus(state=getattr(pb, f"TASK_STATE_{found.state}"))
    if found.text:
        status.message.CopyFrom(agent_message(thread, number, found.text))
    task = pb.Task(id=task_id(thread, number), context_id=thread, status=status)
    if found.state == "COMPLETED":
        task.artifacts.add(artifact_id="reply", name="reply", parts=[pb.Part(text=found.text)])
    return task


@dataclass
class A2ADoor(RequestHandler):
    """One team's A2A requests, answered from its threads (`gateway`: the client and polling)."""

    gateway: Gateway
    team: str
    wait_seconds: float = 300.0
    """How long SendMessage waits for the turn to end or ask before it returns the task working."""

    async def thread_of(self, thread: str) -> bool:
        """True while the thread runs, False once ended; `TaskNotFoundError` when it is not this team's."""
        return await self.workflow_status(thread) == WorkflowExecutionStatus.RUNNING

    async def workflow_status(self, thread: str) -> WorkflowExecutionStatus | None:
        try:
            described = await self.gateway.client.get_workflow_handle(thread).describe()
        except RPCError as err:
            if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                raise TaskNotFoundError(f"no context {thread[:80]!r}") from None
            raise
        if (await described.memo()).get("team") != self.team:
            raise TaskNotFoundError(f"no context {thread[:80]!r} for {self.team}")
        return described.status

    async def task(self, thread: str, number: int) -> pb.Task:
        """Turn `number` of `thread` as a task, read from the workflow now."""
        ended = await self.workflow_status(thread)
        running = ended == WorkflowExecutionStatus.RUNNING
        cancelled = ended in (WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.TERMINATED)
        try:
            status = await self.gateway.status(thread)
        except Exception:  # noqa: BLE001 - an ended thread no worker can read: its end is the state
            if running:
                raise
            return as_task(thread, number, TurnState("CANCELED" if cancelled else "FAILED",
                                                     "the conversation has ended"))
        if number > max(status.turns, 1):
            raise TaskNotFoundError(f"no task {task_id(thread, number)}")
        last = status.last_reply
        reply = None
        if last is not None and last.turn >= number:
            reply = last if last.turn == number else await self.gateway.reply_of(thread, number, last)
        found = turn_state(status, number, reply, running)
        if not running and found.state not in ("COMPLETED", "FAILED") or cancelled and found.state == "FAILED":
            found = TurnState("CANCELED" if cancelled else "FAILED", "the conversation has ended")
        return as_task(thread, number, found)

    async def accept(self, params: pb.SendMessageRequest) -> tuple[str, int, Any]:
        """The message taken by its thread: (thread, turn, what waits for the turn's outcome)."""
        message = params.message
        text = text_of(message)
        prefix = "a2a-" + hashlib.sha256(message.message_id.encode()).hexdigest()[:24] if message.message_id else None
        turn_id = content_id(prefix, text) if prefix else None
        if message.task_id:  # an answer to the task's question
            try:
                thread, number = parse_task_id(message.task_id)
            except NotATask as err:
                raise TaskNotFoundError(str(err)) from None
            if not await self.thread_of(thread):
                raise UnsupportedOperationError(f"task {message.task_id} has ended")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
            status = await self.gateway.status(thread)
            if not answered_by(status, number):
                task = await self.task(thread, number)
                state = pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_")
                if state in FINAL:
                    raise UnsupportedOperationError(f"task {message.task_id} has ended ({state.lower()})")
                raise UnsupportedOperationError(f"task {message.task_id} is not waiting for input ({state.lower()})")
            waiter = await self.gateway.begin_exchange(thread, text, turn_id, seen=status)
            return thread, number, waiter
        seen: ConversationStatus | None = None
        if message.context_id and await self.known(message.context_id):
            thread = message.context_id
            if not await self.thread_of(thread):
                raise UnsupportedOperationError(f"context {thread} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
            seen = await self.gateway.status(thread)
            if seen.pending:
                raise InvalidParamsError(f"task {task_id(thread, answering(seen))} waits for input: "
                                         "send the answer with its taskId")
        elif prefix is not None and not message.context_id:  # a new context named after the message: a retry finds it
            thread = f"{self.team}-a2a-{prefix[4:20]}"
            if not await self.known(thread):
                with contextlib.suppress(WorkflowAlreadyStartedError):  # its twin, sent at once
                    await self.gateway.start_thread(self.team, thread)
            elif not await self.thread_of(thread):
                raise UnsupportedOperationError(f"context {thread} has ended: start a new one")
            again = await self.sent_before(thread, prefix, text)
            if again is not None:
                return again
        else:  # a new context: the client's id for it, when it gave one, is the thread's
            thread = await self.new_thread(message.context_id or None)
        waiter = await self.gateway.begin_exchange(thread, text, turn_id, seen=seen)
        number = (await self.gateway.turn_of(thread, turn_id) if turn_id else None) or (
            await self.gateway.status(thread)).turns
        return thread, number, waiter

    async def sent_before(self, thread: str, prefix: str | None, text: str) -> tuple[str, int, Any] | None:
        """A message whose `messageId` the thread took already: the same text is a retry (its
        turn and outcome, nothing sent again, however late), other text an error (a messageId
        stands for one message, as an Idempotency-Key for one request); None for a new one."""
        if prefix is None:
            return None
        try:
            keyed = await keyed_input(self.gateway.client, thread, prefix, text)
        except KeyReused:
            raise InvalidParamsError("this messageId was sent with another message: use a new messageId") from None
        if keyed.turn is None:
            return None
        waiter = await self.gateway.begin_exchange(thread, text, keyed.id, again=True, turn=keyed.turn)
        return thread, keyed.turn, waiter

    async def known(self, thread: str) -> bool:
        """Whether `thread` is a thread of this team's (`TaskNotFoundError` for another team's)."""
        try:
            await self.gateway.client.get_workflow_handle(thread).describe()
        except RPCError as err:
            if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                return False
            raise
        await self.thread_of(thread)
        return True

    async def new_thread(self, wanted: str | None) -> str:
        if wanted is not None:
            try:
                checks.thread_id(wanted, "contextId")
            except checks.BadRequest as err:
                raise InvalidParamsError(str(err.detail)) from None
        try:
            return await self.gateway.start_thread(self.team, wanted)
        except WorkflowAlreadyStartedError:  # taken between the look and the start, or ended long ago
            raise InvalidParamsError(f"contextId {wanted} is taken: use another") from None

    async def on_message_send(self, params: pb.SendMessageRequest, context: ServerCallContext) -> pb.Task:
        thread, number, waiter = await self.accept(params)
        if not params.configuration.return_immediately:
            try:
                await asyncio.wait_for(waiter(), self.wait_seconds)
            except TimeoutError:
                pass  # still working: the task says so, tasks/get follows it
        return await self.task(thread, number)

    async def on_message_send_stream(self, params: pb.SendMessageRequest, context: ServerCallContext
                                     ) -> AsyncGenerator[Event]:
        thread, number, _ = await self.accept(params)
        async for event in self.updates(thread, number):
            yield event

    async def on_subscribe_to_task(self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
                                   ) -> AsyncGenerator[Event]:
        thread, number = self.parsed(params.id)
        first = await self.task(thread, number)
        if pb.TaskState.Name(first.status.state).removeprefix("TASK_STATE_") in FINAL:
            raise UnsupportedOperationError(f"task {params.id} has ended")
        async for event in self.updates(thread, number):
            yield event

    async def updates(self, thread: str, number: int) -> AsyncGenerator[Event]:
        """The task, then each change of its status, until it ends or waits for input."""
        task = await self.task(thread, number)
        yield task
        seen = (task.status.state, task.status.message.SerializeToString())
        while pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") not in FINAL | PAUSED:
            await asyncio.sleep(self.gateway.poll_seconds)
            task = await self.task(thread, number)
            now = (task.status.state, task.status.message.SerializeToString())
            if now != seen:
                seen = now
                yield pb.TaskStatusUpdateEvent(task_id=task.id, context_id=thread, status=task.status)

    def parsed(self, value: str) -> tuple[str, int]:
        try:
            return parse_task_id(value)
        except NotATask as err:
            raise TaskNotFoundError(str(err)) from None

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        return await self.task(*self.parsed(params.id))

    async def on_cancel_task(self, params: pb.CancelTaskRequest, context: ServerCallContext) -> pb.Task | None:
        thread, number = self.parsed(params.id)
        task = await self.task(thread, number)
        if pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") in FINAL:
            raise TaskNotCancelableError(f"task {params.id} has ended")
        try:
            await self.gateway.client.get_workflow_handle(thread).execute_update("cancel_turn", number)
        except WorkflowUpdateFailedError as err:  # ended meanwhile, or a worker without cancel_turn
            task = await self.task(thread, number)
            if pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") not in FINAL:
                raise TaskNotCancelableError(
                    f"task {params.id} cannot be cancelled: {getattr(err.cause, 'message', err)}") from None
            return task
        # the turn ends "cancelled" once the workflow has stopped it: the state says when
        for _ in range(int(self.gateway.busy_seconds / self.gateway.poll_seconds) + 1):
            task = await self.task(thread, number)
            if pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_") in FINAL:
                return task
            await asyncio.sleep(self.gateway.poll_seconds)
        return await self.task(thread, number)

    async def on_list_tasks(self, params: pb.ListTasksRequest, context: ServerCallContext) -> pb.ListTasksResponse:
        """Each thread's latest task (a context's every task when `contextId` is given), newest
        threads first, from Temporal's visibility store."""
        if params.page_size < 0 or params.page_size > MAX_LISTED:
            raise InvalidParamsError(f"pageSize must be 1 to {MAX_LISTED}")
        limit = params.page_size or 50
        if params.context_id:
            if not await self.known(params.context_id):
                return pb.ListTasksResponse(page_size=limit)
            status = await self.gateway.status(params.context_id)
            numbers = range(max(status.turns, 1), 0, -1)
            tasks = [await self.task(params.context_id, n) for n in list(numbers)[:limit]]
        else:
            tasks = []
            query = "WorkflowType = 'TeamWorkflow'"
            async for wf in self.gateway.client.list_workflows(query, limit=limit * 4):
                if (await wf.memo()).get("team") != self.team:
                    continue
                try:
                    status = await self.gateway.status(wf.id)
                    tasks.append(await self.task(wf.id, max(status.turns, 1)))
                except Exception:  # noqa: BLE001 - one unreadable thread hides no other
                    continue
                if len(tasks) >= limit:
                    break
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        return pb.ListTasksResponse(tasks=tasks, page_size=limit, total_size=len(tasks))

    async def on_create_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(self, params: Any, context: ServerCallContext) -> None:
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> pb.AgentCard:
        raise UnsupportedOperationError("no extended agent card")


def agent_card(team: str, description: str, skills: Mapping[str, str], url: str, version: str,
               bearer: bool) -> pb.AgentCard:
    """The team's card: its agents as skills, its JSON-RPC URL, bearer auth when tokens guard it."""
    card = pb.AgentCard(
        name=team, description=description, version=version,
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id=name, name=name, description=text or name, tags=[team])
                for name, text in skills.items()])
    if bearer:
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
        card.security_requirements.add().schemes["bearer"].SetInParent()
    return card


def a2a_routes(gateway: Gateway, cards: Sequence[TeamCard], bearer: bool) -> list[Route]:
    """Each team's card and JSON-RPC endpoint under /a2a/{team}."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes

    routes: list[Route] = []
    for card in cards:
        base = f"/a2a/{card.name}"

        async def card_page(request: Request, card: TeamCard = card, base: str = base) -> Response:
            url = str(request.base_url).rstrip("/") + base
            skills = {s.name: s.description for s in card.skills}
            return JSONResponse(agent_card_to_dict(agent_card(card.name, card.description, skills, url,
                                                              VERSION, bearer)))
        routes.append(Route(f"{base}/.well-known/agent-card.json", card_page))
        if len(cards) == 1:  # the one team is the host's agent: its card at the well-known root too
            routes.append(Route(WELL_KNOWN, card_page))
        # 0.3 clients too (message/send, tasks/get, ...: most agents still speak it)
        rpc, = create_jsonrpc_routes(A2ADoor(gateway, card.name), base, enable_v0_3_compat=True)
        routes.append(Route(base, versioned(rpc.endpoint), methods=["POST"]))
    return routes


def versioned(endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A 1.0 method (`SendMessage`: 0.3's are `message/send`) sent without the A2A-Version
    header is taken as 1.0, which it can only be (the SDK reads a missing header as 0.3)."""
    async def handle(request: Request) -> Response:
        if "a2a-version" not in request.headers:
            body = await request.body()
            try:
                method = json.loads(body).get("method")
            except (ValueError, AttributeError):
                method = None
            if isinstance(method, str) and method and "/" not in method:
                scope = dict(request.scope)
                scope["headers"] = [*request.scope["headers"], (b"a2a-version", b"1.0")]
                request = Request(scope, request.receive)
                request._body = body  # read once already: the dispatcher reads it from here
        return await endpoint(request)
    return handle


WELL_KNOWN = "/.well-known/agent-card.json"


VERSION = "1.0"
