"""`GET /v1/models`: the teams this gateway serves, as OpenAI's model list, so chat front ends
offer them as models."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.gateway.core.threads import Gateway, UnknownTeam


async def models(request: Request) -> Response:
    """The teams this gateway serves, so chat front ends can offer them as models."""
    gw: Gateway = request.app.state.gateway
    return JSONResponse({"object": "list", "data": [
        {"id": team, "object": "model", "created": 0, "owned_by": "durable-teams"} for team in gw.teams or []]})


async def model(request: Request) -> Response:
    """One team as OpenAI's model object; an unknown one is OpenAI's 404 `model_not_found`."""
    gw: Gateway = request.app.state.gateway
    team = request.path_params["model"]
    gw.check_team(team)
    if gw.teams is None:  # not known here: nothing to describe
        raise UnknownTeam(f"no list of teams on this gateway (serve --team ...): {team!r} unknown")
    return JSONResponse({"id": team, "object": "model", "created": 0, "owned_by": "durable-teams"})
