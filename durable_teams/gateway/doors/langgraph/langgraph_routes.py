"""The LangGraph door's routes, mounted at /langgraph (the gateway's own /threads are the native
API's): what `langgraph-sdk` (Python) and `@langchain/langgraph-sdk` (JS) call, with the
assistants (a team is an assistant, its id and graph id its name), `GET /ok` and `/info`. An
endpoint of the LangGraph Server API not served here answers 501 naming it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from durable_teams.gateway.doors.langgraph import langgraph_crons as crons
from durable_teams.gateway.doors.langgraph import langgraph_runs as runs
from durable_teams.gateway.doors.langgraph import langgraph_store as store
from durable_teams.gateway.doors.langgraph import langgraph_threads as threads
from durable_teams.gateway.doors.langgraph.langgraph_checks import (
    optional_object,
    optional_text,
    page,
)
from durable_teams.gateway.doors.langgraph.langgraph_threads import body_of, gateway_of
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    NotFound,
    Unsupported,
    assistant_object,
)

PREFIX = "/langgraph"


def served(request: Request) -> list[str]:
    teams = gateway_of(request).teams
    if teams is None:
        raise Unsupported("listing assistants on a gateway that does not list its teams (serve --team ...)",
                          endpoint=True)
    return teams


async def search_assistants(request: Request) -> Response:
    body = await body_of(request)
    unknown = sorted(k for k, v in body.items() if v and k not in ("graph_id", "name", "limit", "offset", "metadata"))
    if unknown:
        raise Unsupported(f"assistant search parameter(s) {', '.join(unknown)}")
    wanted = optional_text(body, "graph_id") or optional_text(body, "name")
    offset, limit = page(body)
    metadata = optional_object(body, "metadata")
    found = [a for a in map(assistant_object, served(request)) if (wanted is None or a["graph_id"] == wanted)
             and all(a["metadata"].get(k) == v for k, v in metadata.items())]
    return JSONResponse(found[offset:offset + limit])


async def count_assistants(request: Request) -> Response:
    return JSONResponse(len(served(request)))


async def get_assistant(request: Request) -> Response:
    team = request.path_params["assistant"]
    gw = gateway_of(request)
    if gw.teams is not None and team not in gw.teams:
        raise NotFound(f"no assistant {team[:80]!r} here (assistants: {', '.join(gw.teams) or 'none'})")
    return JSONResponse(assistant_object(team))


async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def info(request: Request) -> Response:
    return JSONResponse({"version": "durable-teams", "flags": {"assistants": True, "crons": True,
                                                               "langsmith": False, "strict_resume": True}})


def unsupported(what: str) -> Any:
    async def answer(request: Request) -> Response:
        raise Unsupported(what, endpoint=True)
    return answer


THREAD = "/threads/{thread}"
RUN = THREAD + "/runs/{run}"
ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE"]
NOT_SERVED = (("/runs/batch", "batch runs"), ("/runs/cancel", "cancelling runs in bulk"),
              ("/runs/crons/count", "counting crons"), ("/threads/count", "counting threads"),
              ("/threads/prune", "pruning threads"), (THREAD + "/stream", "thread streams"),
              (THREAD + "/state/{rest:path}", "a past checkpoint's state"))
"""Endpoints of the LangGraph Server API this door does not serve: a 501 naming each."""


def assistant_routes() -> list[BaseRoute]:
    return [
        Route("/ok", ok), Route("/info", info),
        Route("/assistants/search", search_assistants, methods=["POST"]),
        Route("/assistants/count", count_assistants, methods=["POST"]),
        Route("/assistants", unsupported("creating assistants (a team is defined in code)"), methods=["POST"]),
        Route("/assistants/{assistant}", get_assistant, methods=["GET"]),
        Route("/assistants/{assistant}/{part:path}", unsupported("assistant graphs, schemas, subgraphs and versions"),
              methods=["GET", "POST", "PATCH", "DELETE"]),
    ]


def cron_and_store_routes() -> list[BaseRoute]:
    return [
        Route("/runs/crons", crons.create, methods=["POST"]),
        Route(THREAD + "/runs/crons", crons.create, methods=["POST"]),
        Route("/runs/crons/search", crons.search, methods=["POST"]),
        Route("/runs/crons/{cron}", crons.delete, methods=["DELETE"]),
        Route("/runs/crons/{cron}", unsupported("updating a cron (delete it and create another)"), methods=["PATCH"]),
        Route("/store/items", store.put, methods=["PUT"]),
        Route("/store/items", store.get, methods=["GET"]),
        Route("/store/items", store.delete, methods=["DELETE"]),
        Route("/store/items/search", store.search, methods=["POST"]),
        Route("/store/namespaces", store.namespaces, methods=["POST"]),
    ]


def thread_routes() -> list[BaseRoute]:
    return [
        Route("/threads", threads.create, methods=["POST"]),
        Route("/threads/search", threads.search, methods=["POST"]),
        Route(THREAD, threads.get, methods=["GET"]),
        Route(THREAD, threads.delete, methods=["DELETE"]),
        Route(THREAD, threads.update, methods=["PATCH"]),
        Route(THREAD + "/copy", threads.copy, methods=["POST"]),
        Route(THREAD + "/state", threads.state, methods=["GET"]),
        Route(THREAD + "/state", threads.update_state, methods=["POST"]),
        Route(THREAD + "/history", threads.history, methods=["POST"]),
    ]


def run_routes() -> list[BaseRoute]:
    return [
        Route(THREAD + "/runs", runs.create, methods=["POST"]),
        Route(THREAD + "/runs", runs.listed, methods=["GET"]),
        Route(THREAD + "/runs/wait", runs.wait, methods=["POST"]),
        Route(THREAD + "/runs/stream", runs.stream, methods=["POST"]),
        Route(RUN, runs.get, methods=["GET"]),
        Route(RUN, unsupported("deleting a run (a turn stays in its thread's history)"), methods=["DELETE"]),
        Route(RUN + "/join", runs.join, methods=["GET"]),
        Route(RUN + "/stream", runs.join_stream, methods=["GET"]),
        Route(RUN + "/cancel", runs.cancel, methods=["POST"]),
        Route("/runs", runs.create, methods=["POST"]),
        Route("/runs/wait", runs.wait, methods=["POST"]),
        Route("/runs/stream", runs.stream, methods=["POST"]),
    ]


def langgraph_mount() -> BaseRoute:
    """Every route of the door under `PREFIX`: crons and the store, then the endpoints not
    served (before the served paths that would take them: `/threads/count` a thread's id),
    assistants, threads and runs."""
    refused: list[BaseRoute] = [Route(path, unsupported(what), methods=ANY_METHOD) for path, what in NOT_SERVED]
    routes = assistant_routes()
    return Mount(PREFIX, routes=[*routes[:2], *cron_and_store_routes(), *refused, *routes[2:], *thread_routes(),
                                 *run_routes()])
