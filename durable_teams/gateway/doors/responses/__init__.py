"""OpenAI Responses: `/v1/responses` (door.py; docs/responses.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from durable_teams.gateway.core.errors import error
from durable_teams.gateway.core.mounts import Mount, Serving


async def on_unknown_response(request: Request, exc: Exception) -> Response:
    return error(404, str(exc), "not_found")


def mount(serving: Serving) -> Mount:
    from durable_teams.gateway.doors.responses import door
    from durable_teams.gateway.doors.responses.view import UnknownResponse

    return Mount([
        Route("/v1/responses", door.create, methods=["POST"]),
        Route("/v1/responses/{response}", door.retrieve, methods=["GET"]),
        Route("/v1/responses/{response}", door.delete, methods=["DELETE"]),
        Route("/v1/responses/{response}/input_items", door.input_items),
        Route("/v1/responses/{response}/cancel", door.cancel, methods=["POST"]),
    ], errors={UnknownResponse: on_unknown_response})
