"""The A2A door over HTTP: each served team's agent card and JSON-RPC endpoint (the a2a-sdk's
dispatcher, 1.0 and 0.3 method names), the caller's scope carried into each call, and a
streamed method held as one of the caller's streams. The requests themselves are answered by
durable_teams/gateway/doors/a2a/door.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types import a2a_pb2 as pb
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from durable_teams.gateway.core.auth import may_stream
from durable_teams.gateway.core.scopes import caller_identity, scope_of
from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.a2a.door import A2ADoor
from durable_teams.gateway.doors.a2a.push_configs import PushOptions


class ScopedContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the caller's scope (set by the gateway's Guard,
    durable_teams/gateway/core/auth.py): every request of the door keeps to the scope's threads."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["scope"] = scope_of(request)
        context.state["user"] = caller_identity(request.scope.get("state"))
        context.state.get("headers", {}).pop("authorization", None)  # the bearer token: in no state
        return context


def agent_card(team: str, description: str, skills: Mapping[str, str], url: str, version: str,
               bearer: bool) -> pb.AgentCard:
    """The team's card: its agents as skills, its JSON-RPC URL, bearer auth when tokens guard it."""
    card = pb.AgentCard(
        name=team, description=description, version=version,
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id=name, name=name, description=text or name, tags=[team])
                for name, text in skills.items()])
    if bearer:
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
        card.security_requirements.add().schemes["bearer"].SetInParent()
    return card


def a2a_routes(gateway: Gateway, cards: Sequence[TeamCard], bearer: bool,
               push: PushOptions | None = None) -> list[Route]:
    """Each team's card and JSON-RPC endpoint under /a2a/{team} (`push`: the operator's push
    notification options; None: from the environment, `PushOptions.from_env`)."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes

    routes: list[Route] = []
    push = push or PushOptions.from_env()
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
        rpc, = create_jsonrpc_routes(A2ADoor(gateway, card.name, push=push), base, ScopedContext(),
                                     enable_v0_3_compat=True)
        routes.append(Route(base, versioned(rpc.endpoint), methods=["POST"]))
    return routes


STREAMS = {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
"""The methods answered with a stream (1.0's and 0.3's names)."""


def versioned(endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A 1.0 method (`SendMessage`: 0.3's are `message/send`) sent without the A2A-Version
    header is taken as 1.0, which it can only be (the SDK reads a missing header as 0.3).
    A streamed method holds one of the caller's streams (`--max-followers`) until it ends: 429
    with the protocol's error object when the caller holds all it may."""
    async def handle(request: Request) -> Response:
        body = await request.body()
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, no UTF-8, nested too deep, a number too long
            return JSONResponse({"jsonrpc": "2.0", "id": None,
                                 "error": {"code": -32700, "message": "Parse error: the body is no JSON it can read"}})
        method = parsed.get("method") if isinstance(parsed, dict) else None
        invalid = not_a_request(parsed)
        if invalid:  # the SDK would log it with a traceback, as if the server had failed
            return JSONResponse({"jsonrpc": "2.0", "id": request_id(parsed),
                                 "error": {"code": -32600, "message": invalid}})
        refused = bad_params(method, parsed) or unknown_status(method, parsed)
        if refused:  # the SDK's parser would read it as no filter at all
            return JSONResponse({"jsonrpc": "2.0", "id": parsed.get("id"), "error": {"code": -32602, "message": refused}})
        if method in STREAMS and not may_stream(request):
            return JSONResponse({"jsonrpc": "2.0", "id": parsed.get("id"), "error": {
                "code": TOO_MANY_STREAMS, "message": "too many open streams for this caller; try again later"}},
                status_code=429, headers={"Retry-After": "1"})
        if "a2a-version" not in request.headers and isinstance(method, str) and method and "/" not in method:
            scope = dict(request.scope)
            scope["headers"] = [*request.scope["headers"], (b"a2a-version", b"1.0")]
            request = Request(scope, request.receive)
            request._body = body  # read once already: the dispatcher reads it from here
        return await endpoint(request)
    return handle


def not_a_request(parsed: Any) -> str | None:
    """Why a parsed body is no JSON-RPC 2.0 request (None: it is one, as far as its frame goes)."""
    if isinstance(parsed, list):
        return "Invalid Request: batch requests are not supported"
    if not isinstance(parsed, dict):
        return "Invalid Request: a request is a JSON object"
    if parsed.get("jsonrpc") != "2.0":
        return "Invalid Request: 'jsonrpc' must be exactly '2.0'"
    if not isinstance(parsed.get("method"), str) or not parsed["method"]:
        return "Invalid Request: 'method' is required (a string)"
    if parsed.get("id") is not None and request_id(parsed) is None:
        return "Invalid Request: id must be a string, integer, or null"
    return None


def request_id(parsed: Any) -> str | int | None:
    """The request's id when it is one JSON-RPC allows (a string or an integer), else null."""
    found = parsed.get("id") if isinstance(parsed, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def bad_params(method: object, parsed: dict[str, Any]) -> str | None:
    """Why a request's params are not its method's (None: they are, or the method is not a
    1.0 one): read here as the SDK reads them, so a refusal is -32602 with no traceback logged."""
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from google.protobuf.json_format import ParseDict, ParseError

    params = parsed.get("params", {})
    if params is not None and not isinstance(params, dict):
        return "Invalid params: params must be an object"
    model = JsonRpcDispatcher.METHOD_TO_MODEL.get(method) if isinstance(method, str) else None
    if model is None:
        return None
    try:
        ParseDict(params or {}, model(), ignore_unknown_fields=True)
    except (ParseError, ValueError, TypeError, AttributeError, RecursionError) as err:
        return f"Invalid params: {str(err)[:200]}"
    return None


def unknown_status(method: object, parsed: Any) -> str | None:
    """Why a ListTasks request's `status` is no task state (None: it is one, or none given)."""
    if method != "ListTasks":  # 1.0 (0.3 names its states otherwise)
        return None
    params = parsed.get("params") if isinstance(parsed, dict) else None
    status = params.get("status") if isinstance(params, dict) else None
    if status is None or status in pb.TaskState.keys() or status in pb.TaskState.values():
        return None
    return f"status {str(status)[:40]!r} is not a task state (TASK_STATE_WORKING, ...)"


TOO_MANY_STREAMS = -32000
"""JSON-RPC's implementation-defined server error: the caller holds all the streams it may."""


WELL_KNOWN = "/.well-known/agent-card.json"


VERSION = "1.0"
