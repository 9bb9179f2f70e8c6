"""The ASGI app: the gateway's doors over its core, behind its guard.

Each door is a folder under durable_teams/gateway/doors/ whose package gives one `mount`
function (durable_teams/gateway/core/mounts.py); `DOORS` lists them, so a new door is a folder
and a line here:

    native       /threads..., /questions, the web inbox at /
    openai_chat  POST /v1/chat/completions, GET /v1/models
    responses    /v1/responses...
    mcp          /mcp (with the `mcp` extra)
    a2a          /a2a/{team} and its card (with the `a2a` extra and team cards)
    langgraph    /langgraph/... (the LangGraph Server API, docs/langgraph-server.md)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from durable_teams.client.refusals import (
    ConversationBusy,
    ConversationEnded,
    ReplyRejected,
    TurnAbandoned,
    TurnRejected,
)
from durable_teams.gateway.core.auth import DEFAULT_MAX_BODY, Guard, Limits
from durable_teams.gateway.core.errors import (
    on_http_error,
    on_temporal_error,
    on_unexpected,
    on_unknown_team,
)
from durable_teams.gateway.core.exposure import Exposure
from durable_teams.gateway.core.mounts import Door, Serving
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.gateway.core.threads import Gateway, UnknownTeam
from durable_teams.gateway.doors import a2a, langgraph, mcp, native, openai_chat, responses
from durable_teams.live.from_env import hub_from_env
from durable_teams.live.hub import LiveHub, LocalHub

if TYPE_CHECKING:  # the a2a extra's: imported only where the A2A door is served
    from durable_teams.gateway.doors.a2a.push_configs import PushOptions

DOORS: tuple[Door, ...] = (native.mount, openai_chat.mount, responses.mount, mcp.mount, a2a.mount,
                          langgraph.mount)


async def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


def create_app(client: Client, *, task_queue: str, tokens: Sequence[str | Token] | None = None,
               max_body: int = DEFAULT_MAX_BODY, poll_seconds: float = 0.1,
               live_hub: LiveHub | None = None, teams: Sequence[str] | None = None,
               exposure: Exposure | None = None, limits: Limits | None = None,
               busy_seconds: float = 10.0, chat_idle_seconds: float = 3600.0,
               chat_marks: bool = True, cards: Sequence[TeamCard] | None = None,
               a2a_push: PushOptions | None = None) -> Guard:
    """The gateway as an ASGI app, guarded by `tokens` (none: open) and a body size limit.
    `live_hub`: where live text deltas come from (default: DURABLE_TEAMS_LIVE_URL's broker,
    else this process's, durable_teams/live/hub.py). `teams`: the team names the workers serve
    (listed by /v1/models; another name is refused with 404); None: not checked.
    `exposure`: the hosts and origins served (default: loopback names only); `limits`: per
    caller; `busy_seconds`: how long a turn waits for a thread with 10 turns in flight
    before 429; `tokens`: strings are operator tokens, a `Token` may be scoped
    (durable_teams/gateway/core/scopes.py); `chat_idle_seconds`: how long a chat client's thread
    waits for its next message (durable_teams/gateway/core/resent_history.py); `chat_marks`: a chat
    thread's first answer ends with its mark (durable_teams/gateway/core/thread_marks.py); `cards`:
    what the teams say of themselves: the MCP tools at /mcp (with the `mcp` extra) describe them,
    and each is an A2A agent at /a2a/{team} (with the `a2a` extra); `a2a_push`: its push
    notifications' options (None: from the environment, durable_teams/gateway/doors/a2a/push_configs.py)."""
    hub = live_hub or hub_from_env(client.data_converter.payload_codec)
    gateway = Gateway(client, task_queue, poll_seconds, hub, list(teams) if teams is not None else None,
                      busy_seconds, chat_idle_seconds=chat_idle_seconds, chat_marks=chat_marks,
                      live_responses=not isinstance(hub, LocalHub))  # a broker: the same on every gateway
    serving = Serving(gateway, cards or [], bearer=bool(tokens), options={"a2a": a2a_push})
    routes: list[BaseRoute] = [Route("/healthz", healthz)]
    lifespans = []
    handlers: dict[Any, Any] = {HTTPException: on_http_error, UnknownTeam: on_unknown_team}
    for door in DOORS:
        mounted = door(serving)
        if mounted is not None:
            routes += mounted.routes
            lifespans += mounted.lifespans
            handlers |= mounted.errors
    for kind in (ReplyRejected, ConversationEnded, ConversationBusy, WorkflowQueryFailedError,
                 WorkflowUpdateFailedError, TurnRejected, TurnAbandoned, RPCError):
        handlers[kind] = on_temporal_error
    handlers[Exception] = on_unexpected

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for running in lifespans:
                await stack.enter_async_context(running())
            yield

    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    app.state.gateway = gateway
    return Guard(app, tokens or [], exposure=exposure, limits=limits or Limits(max_body=max_body))
