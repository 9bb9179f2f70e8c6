"""Served teams as MCP tools: one tool per team, a call a turn of a conversation.

    tools/call <team> {"message": "...", "thread_id"?: "..."}

A call starts a thread (or continues `thread_id`), waits up to `wait_seconds` for the turn's
outcome and returns it: the reply, or, when the team asks a person (`ask_human`, an approval),
an `input_required` result (MCP 2026-07-28) whose input request is an elicitation form and
whose `requestState` names the thread and the question; the client's repeated call answers
it. A client of an earlier revision gets `elicitation/create` when it declared elicitation,
else a result that says to call again with `thread_id` and the answer. A turn that takes
longer returns `{"status": "working", "thread_id": ...}`: a call with that `thread_id` and no
message waits for it again, from any process, after any restart (nothing is kept here: the
thread is a workflow). A client that leaves does not cancel anything.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import NoBackChannelError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp
from temporalio.client import WorkflowExecutionDescription

from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.outcomes import Outcome
from durable_teams.gateway.core.tenant_ids import in_own_words, shown, visible_thread
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.mcp.forms import answer_text, elicit_form, schema_of, text_result
from durable_teams.gateway.doors.mcp.methods import (
    TaskServer,
    add_task_methods,
    caller_scope,
    caller_user,
)
from durable_teams.gateway.doors.mcp.rpc import McpHttp
from durable_teams.gateway.doors.mcp.task_wire import declares_tasks
from durable_teams.gateway.doors.mcp.tasks import McpTasks
from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import answering, question_text

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what to ask the team, or the answer to its question"},
        "thread_id": {"type": "string", "description": "continue this conversation (from an earlier result)"},
    },
}


@dataclass(frozen=True)
class Call:
    """A tool call's arguments, checked."""

    message: str | None
    thread_id: str | None


class BadCall(ValueError):
    """Arguments the tool cannot take: the result says why (`isError`)."""


def call_of(arguments: Mapping[str, Any] | None) -> Call:
    """`arguments` checked: a non-empty `message` unless a `thread_id` is given (then it waits
    for that thread's outcome); no other keys."""
    args = dict(arguments or {})
    unknown = set(args) - {"message", "thread_id"}
    if unknown:
        raise BadCall(f"unknown argument(s): {', '.join(sorted(unknown))} (takes message, thread_id)")
    message, thread = args.get("message"), args.get("thread_id")
    if message is not None and (not isinstance(message, str) or not message.strip()):
        raise BadCall("'message' must be a non-empty string")
    if thread is not None and (not isinstance(thread, str) or not thread or len(thread) > 200
                               or not thread.isprintable()):
        raise BadCall("'thread_id' must be a thread id from an earlier result")
    if message is None and thread is None:
        raise BadCall("give 'message' (and 'thread_id' to continue a conversation)")
    return Call(message, thread)


def state_of(thread: str, question: str) -> str:
    """The `requestState` of a question: which thread, which question (nothing secret: the
    caller may name any thread of the team anyway; the answer is checked against the thread)."""
    return json.dumps({"thread": thread, "question": question})


def parse_state(state: str) -> tuple[str, str]:
    try:
        data = json.loads(state)
        thread, question = data["thread"], data["question"]
    except (ValueError, TypeError, KeyError):
        raise BadCall("requestState is not one this server gave") from None
    if not isinstance(thread, str) or not isinstance(question, str):
        raise BadCall("requestState is not one this server gave")
    return thread, question


@dataclass
class McpDoor:
    """The tools of `gateway`'s teams (`descriptions`: team -> what the tool says it does)."""

    gateway: Gateway
    descriptions: Mapping[str, str]
    wait_seconds: float = 300.0
    """How long a call waits for the turn's outcome before it returns "working"."""
    poll_ms: int = 1000
    """The polling interval a task suggests to its client."""

    def __post_init__(self) -> None:
        self.tasks = McpTasks(self.gateway, self.teams(), self.poll_ms, self.wait_seconds)

    def http_app(self) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
        """Streamable HTTP, stateless and in plain JSON (no session in this process: a
        restarted gateway serves the same clients), and what runs it (the app's lifespan).
        The gateway's guard checks tokens, Host, Origin and sizes before it; `McpHttp` the
        JSON-RPC envelope and the caller's open streams."""
        manager = StreamableHTTPSessionManager(app=self.server(), stateless=True, json_response=True)
        # a client of an earlier revision that declares elicitation gets a session, streamed,
        # so the door can ask it (`ask`): as `durable-teams mcp` over stdio does
        sessions = StreamableHTTPSessionManager(app=self.server())

        @asynccontextmanager
        async def run() -> AsyncIterator[None]:
            async with manager.run(), sessions.run():
                yield
        return McpHttp(StreamableHTTPASGIApp(manager), StreamableHTTPASGIApp(sessions)), run

    def server(self) -> Server[Any]:
        server = TaskServer("durable-teams", instructions="Each tool is a team of agents: send it a message; "
                            "a result's thread_id continues the conversation.",
                            on_list_tools=self.list_tools)
        # registered apart: a call may also return a task, which `on_call_tool` does not type
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        return add_task_methods(server, self)

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        legacy = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        execution = types.ToolExecution(task_support="optional") if legacy else None
        return types.ListToolsResult(tools=[
            types.Tool(name=team, description=self.descriptions.get(team) or f"the {team} team",
                       input_schema=INPUT_SCHEMA, execution=execution) for team in self.teams()])

    def teams(self) -> list[str]:
        return list(self.gateway.teams if self.gateway.teams is not None else self.descriptions)

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        team = params.name
        if team not in self.teams():
            return text_result(f"no tool {team!r} (teams: {', '.join(self.teams())})", "", "failed", True)
        scope = caller_scope(ctx)
        call: Call | None = None
        try:
            call = call_of(params.arguments)
            if params.request_state is not None:  # the repeated call of an input_required result
                thread, question = parse_state(params.request_state)
                return await self.answered(ctx, team, thread, question, params.input_responses or {})
            thread, described = await self.thread_described(team, call.thread_id, scope, caller_user(ctx))
            if params.task is not None or (ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
                                           and declares_tasks(ctx.params)):
                view = await self.tasks.submitted(thread, call.message, scope, described)
                return {"task": view.legacy()} if params.task is not None else (
                    {"resultType": "task"} | view.modern(detailed=False))
            if call.message is None:
                return await self.outcome(ctx, thread, None)
            status = await self.gateway.status(thread)
            waiter = await self.gateway.begin_exchange(thread, call.message, seen=status)
            return await self.outcome(ctx, thread, waiter)
        except Exception as err:  # noqa: BLE001 - the model reads why, the conversation is untouched
            # the core's words name workflows: by the caller's ids (a BadCall's are the caller's already)
            why = in_own_words(scope, f"{type(err).__name__}: {err}") if not isinstance(err, BadCall) else str(err)
            return text_result(why, call.thread_id if call and call.thread_id else "", "failed", True)

    async def thread_for(self, team: str, wanted: str | None, scope: str | None,
                         user: str | None = None) -> str:
        """A new thread of `team` in the caller's scope (its tenant) speaking for `user`, or
        the one the caller names `wanted` (its own id for it: core/tenant_ids.py) if it sees it."""
        return (await self.thread_described(team, wanted, scope, user))[0]

    async def thread_described(self, team: str, wanted: str | None, scope: str | None, user: str | None = None
                               ) -> tuple[str, WorkflowExecutionDescription | None]:
        """`thread_for`, with the description of the thread read to check it (None: a new thread)."""
        if wanted is None:
            return await self.gateway.start_thread(team, scope=scope, user=user), None
        try:  # one describe for the caller's own id
            thread, described = await visible_thread(self.gateway, scope, wanted)
            running = await self.gateway.running_described(thread, team, scope=scope, described=described)
            if running is not None:
                return thread, running
        except ConversationNotFound:  # another scope's thread: as if there were none
            pass
        raise BadCall(f"no thread {wanted}")

    async def answered(self, ctx: ServerRequestContext[Any], team: str, thread: str, question: str,
                       responses: Mapping[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
        thread = await self.thread_for(team, thread, caller_scope(ctx))
        status = await self.gateway.status(thread)
        asked = next((q for q in status.pending if q.question_id == question), None)
        if asked is None:  # answered elsewhere since: what the thread does now
            return await self.outcome(ctx, thread, None)
        text = answer_text(responses.get(question), asked)
        if text is None:
            own = shown(caller_scope(ctx), thread)
            return text_result(f"not answered: {question_text(asked)} (call again with thread_id "
                               f"{own!r} and your answer as message)", own, "input_required")
        waiter = await self.gateway.begin_exchange(thread, text, seen=status)
        return await self.outcome(ctx, thread, waiter)

    async def outcome(self, ctx: ServerRequestContext[Any], thread: str, waiter: Any
                      ) -> types.CallToolResult | types.InputRequiredResult:
        """The outcome of the thread's turn in flight (`waiter`'s, or the thread's latest), the
        thread named by the caller's id for it."""
        own = shown(caller_scope(ctx), thread)
        try:
            found: Outcome = await asyncio.wait_for(waiter() if waiter else self.latest(thread), self.wait_seconds)
        except TimeoutError:
            return text_result(f"the team is still working: call again with thread_id {own!r} "
                               "and no message to wait for its answer", own, "working")
        if found.kind != "question":
            return text_result(found.text, own, "failed" if found.kind == "failed" else "completed",
                               found.kind == "failed")
        status = await self.gateway.status(thread)
        if not status.pending:  # answered meanwhile by someone else
            return await self.outcome(ctx, thread, None)
        return await self.ask(ctx, thread, status.pending[0])

    async def latest(self, thread: str) -> Outcome:
        status = await self.gateway.status(thread)
        if status.pending:
            return Outcome("question", question_text(status.pending[0]))
        waiter = await self.gateway.begin_exchange(thread, "", seen=status, again=True, turn=answering(status))
        return await waiter()

    async def ask(self, ctx: ServerRequestContext[Any], thread: str, q: Question
                  ) -> types.CallToolResult | types.InputRequiredResult:
        message, own = question_text(q), shown(caller_scope(ctx), thread)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return types.InputRequiredResult(input_requests={q.question_id: elicit_form(q)},
                                             request_state=state_of(own, q.question_id))
        elicits = ctx.session.check_client_capability(
            types.ClientCapabilities(elicitation=types.ElicitationCapability()))
        if elicits:  # an earlier revision's client: ask the person now
            try:
                response = await ctx.session.elicit_form(message, schema_of(q), ctx.request_id)
            except NoBackChannelError:  # stateless HTTP: no way to ask now; the text asks instead
                response = None
            text = answer_text(response, q) if response is not None else None
            if text is not None:
                status = await self.gateway.status(thread)
                waiter = await self.gateway.begin_exchange(thread, text, seen=status)
                return await self.outcome(ctx, thread, waiter)
        return text_result(f"{message}\n(answer with this tool: thread_id {own!r}, your answer as message)",
                           own, "input_required")

