"""The tasks methods on the door's MCP server: `tasks/get`, `tasks/update`, `tasks/cancel` for
both forms, `tasks/result` and `tasks/list` for 2025-11-25's (durable_teams/gateway/doors/mcp/tasks.py
says what a task is). The `mcp` SDK serves no tasks itself: these are its custom methods, and a
2025-11-25 `tools/call` with a `task` field is taken before the SDK would hold its
`CreateTaskResult` against the plain tool result's shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from durable_teams.gateway.core.scopes import caller_identity
from durable_teams.gateway.doors.mcp.forms import text_result
from durable_teams.gateway.doors.mcp.task_pages import BadCursor
from durable_teams.gateway.doors.mcp.task_wire import (
    TASKS_EXTENSION,
    TaskResultParams,
    UpdateTaskParams,
    declares_tasks,
    missing_capability,
    waiting,
    with_related,
)
from durable_teams.gateway.doors.mcp.tasks import McpTasks

LEGACY_TASKS = types.ServerTasksCapability(
    list=types.TasksListCapability(), cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability())))


class TaskDoor(Protocol):
    tasks: McpTasks

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any: ...


class TaskServer(Server[Any]):
    """The SDK's server declaring tasks: `capabilities.tasks` (2025-11-25) and the tasks
    extension (2026-07-28)."""

    def get_capabilities(self, notification_options: NotificationOptions | None = None,
                         experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                         extensions: dict[str, dict[str, Any]] | None = None, *,
                         protocol_version: str | None = None) -> types.ServerCapabilities:
        found = super().get_capabilities(notification_options, experimental_capabilities,
                                         {TASKS_EXTENSION: {}} | (extensions or {}), protocol_version=protocol_version)
        return found.model_copy(update={"tasks": LEGACY_TASKS})


def caller_scope(ctx: ServerRequestContext[Any]) -> str | None:
    """The scope of the request's token (durable_teams/gateway/core/scopes.py; set by the gateway's
    guard): None for an operator, and over stdio (whoever runs the process)."""
    scope = getattr(ctx.request, "scope", None)
    state = scope.get("state") if isinstance(scope, Mapping) else None
    found = state.get("scope") if isinstance(state, Mapping) else None
    return found if isinstance(found, str) else None


def caller_user(ctx: ServerRequestContext[Any]) -> str | None:
    """The end user a new thread speaks for: the caller's token (`scopes.caller_identity`);
    None without one, and over stdio."""
    scope = getattr(ctx.request, "scope", None)
    return caller_identity(scope.get("state") if isinstance(scope, Mapping) else None)


def modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def add_task_methods(server: Server[Any], door: TaskDoor) -> Server[Any]:
    """`server` serving the door's tasks."""
    methods = TaskMethods(door)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, methods.get)
    server.add_request_handler("tasks/update", UpdateTaskParams, methods.update)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, methods.cancel)
    server.add_request_handler("tasks/result", TaskResultParams, methods.result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, methods.listed)
    server.middleware.append(methods.legacy_task_calls)
    return server


class TaskMethods:
    """The handlers, each reading the task from the workflow (durable_teams/gateway/doors/mcp/tasks.py)."""

    def __init__(self, door: TaskDoor) -> None:
        self.door, self.tasks = door, door.tasks

    async def get(self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> dict[str, Any]:
        view = await self.tasks.read(params.task_id, required(ctx))
        return view.modern() if modern(ctx) else view.legacy()

    async def update(self, ctx: ServerRequestContext[Any], params: UpdateTaskParams) -> dict[str, Any]:
        await self.tasks.update(params.task_id, params.input_responses, required(ctx))
        return {}

    async def cancel(self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams) -> dict[str, Any]:
        view = await self.tasks.cancel(params.task_id, required(ctx))
        return {} if modern(ctx) else view.legacy()

    async def result(self, ctx: ServerRequestContext[Any], params: TaskResultParams) -> dict[str, Any]:
        """Waits for the outcome (up to the door's wait), or returns the question to answer."""
        scope = legacy_only(ctx)
        if params.input_responses:
            await self.tasks.update(params.task_id, params.input_responses, scope)
        view = await self.tasks.settled(params.task_id, scope)
        if view.status == "input_required":
            return waiting(view)
        if not view.terminal:
            still = text_result(f"the team is still working: call tasks/result again for {view.task_id!r}",
                                view.thread, "working")
            return with_related(still.model_dump(by_alias=True, mode="json", exclude_none=True), view.task_id)
        return with_related(view.result(), view.task_id)

    async def listed(self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        scope = legacy_only(ctx)
        try:
            views, after = await self.tasks.listed(scope, params.cursor)
        except BadCursor as err:
            raise MCPError(types.INVALID_PARAMS, str(err)) from None
        page: dict[str, Any] = {"tasks": [view.legacy() for view in views]}
        if after:
            page["nextCursor"] = after
        return page

    async def legacy_task_calls(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """A 2025-11-25 `tools/call` with a `task` field returns `{"task": ...}`."""
        raw = ctx.params
        if ctx.method != "tools/call" or modern(ctx) or not isinstance(raw, Mapping) or raw.get("task") is None:
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            raise MCPError(types.INVALID_PARAMS, "Invalid request parameters") from None
        found: HandlerResult = await self.door.call_tool(ctx, params)
        return found


def required(ctx: ServerRequestContext[Any]) -> str | None:
    """The caller's scope; a 2026-07-28 request must declare the extension (-32021)."""
    if modern(ctx) and not declares_tasks(ctx.params):
        raise missing_capability()
    return caller_scope(ctx)

def legacy_only(ctx: ServerRequestContext[Any]) -> str | None:
    """`tasks/result` and `tasks/list` are 2025-11-25's (the extension has neither)."""
    if modern(ctx):
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found")
    return caller_scope(ctx)
