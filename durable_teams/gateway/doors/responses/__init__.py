"""OpenAI Responses: `/v1/responses` (creating one: door.py; one by its id: by_id.py; docs/responses.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from durable_teams.gateway.core.mounts import Mount, Serving


async def on_unknown_response(request: Request, exc: Exception) -> Response:
    """OpenAI's shape: an unknown `previous_response_id` names the field and its code."""
    param = getattr(exc, "param", None)
    code = "previous_response_not_found" if param == "previous_response_id" else "not_found"
    return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error", "param": param,
                                   "code": code}}, status_code=404)


def mount(serving: Serving) -> Mount:
    from durable_teams.gateway.doors.responses import by_id, door
    from durable_teams.gateway.doors.responses.from_log import UnknownResponse

    return Mount([
        Route("/v1/responses", door.create, methods=["POST"]),
        Route("/v1/responses/{response}", by_id.retrieve, methods=["GET"]),
        Route("/v1/responses/{response}", by_id.delete, methods=["DELETE"]),
        Route("/v1/responses/{response}/input_items", by_id.input_items),
        Route("/v1/responses/{response}/cancel", by_id.cancel, methods=["POST"]),
    ], errors={UnknownResponse: on_unknown_response})
