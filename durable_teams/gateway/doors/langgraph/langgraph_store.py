"""The LangGraph door's store: LangGraph's `store` endpoints over the memory store the teams'
tools use (durable_teams/memory/, opened from the gateway's `DURABLE_TEAMS_MEMORY` as a worker
opens it: set both to the same SQLite file or PostgreSQL database). A scoped token's items live
under its own namespace (`("scope:<name>", ...)`, the prefix never shown to it): another
tenant's items are not found; operators see every namespace as it is."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.doors.langgraph.langgraph_checks import (
    optional_object,
    optional_text,
    page,
    whole,
)
from durable_teams.gateway.doors.langgraph.langgraph_threads import body_of
from durable_teams.gateway.doors.langgraph.langgraph_wire import NotFound, Unsupported
from durable_teams.memory.store import Store, StoreError

LOCK = asyncio.Lock()


async def store_of(request: Request) -> Store:
    """The store, opened on first use and kept by the app."""
    async with LOCK:
        store = getattr(request.app.state, "langgraph_store", None)
        if store is None:
            from durable_teams.memory.store_config import open_store

            store = request.app.state.langgraph_store = open_store()
        return store


def own(request: Request, namespace: Any, allow_empty: bool = False) -> tuple[str, ...]:
    """The namespace as stored: a scoped caller's under its scope."""
    if not isinstance(namespace, list | tuple) or not all(isinstance(n, str) for n in namespace) or (
            not namespace and not allow_empty):
        raise checks.BadRequest("a namespace is a non-empty list of strings")
    if any("." in label for label in namespace):  # get_item names it joined by periods: as LangGraph, refused
        raise checks.BadRequest("a namespace label cannot contain periods ('.')")
    scope = scope_of(request)
    return ((f"scope:{scope}",) if scope else ()) + tuple(namespace)


def shown(request: Request, item: dict[str, Any]) -> dict[str, Any]:
    return item | {"namespace": item["namespace"][1:] if scope_of(request) else item["namespace"]}


def refuse(body: dict[str, Any], served: set[str]) -> None:
    unknown = sorted(k for k, v in body.items() if v is not None and k not in served)
    if unknown:
        raise Unsupported(f"store parameter(s) {', '.join(unknown)}")


async def put(request: Request) -> Response:
    body = await body_of(request, empty_ok=False)
    refuse(body, {"namespace", "key", "value"})
    if not isinstance(body.get("value"), dict):
        raise checks.BadRequest("'value' is a JSON object")
    if not isinstance(body.get("key"), str):
        raise checks.BadRequest("'key' is a string")
    try:
        await (await store_of(request)).put(own(request, body.get("namespace")), str(body.get("key") or ""),
                                            body["value"])
    except StoreError as err:
        raise checks.BadRequest(str(err)) from None
    return Response(status_code=204)


async def get(request: Request) -> Response:
    namespace = request.query_params.get("namespace", "")
    key = request.query_params.get("key", "")
    try:
        item = await (await store_of(request)).get(own(request, namespace.split(".") if namespace else []), key)
    except StoreError as err:
        raise checks.BadRequest(str(err)) from None
    if item is None:
        raise NotFound(f"no item {key[:80]!r} in namespace {namespace[:80]!r}")
    return JSONResponse(shown(request, item.as_json()))


async def delete(request: Request) -> Response:
    body = await body_of(request, empty_ok=False)
    refuse(body, {"namespace", "key"})
    try:
        await (await store_of(request)).delete(own(request, body.get("namespace")), str(body.get("key") or ""))
    except StoreError as err:
        raise checks.BadRequest(str(err)) from None
    return Response(status_code=204)


async def search(request: Request) -> Response:
    body = await body_of(request)
    refuse(body, {"namespace_prefix", "filter", "limit", "offset", "query"})
    offset, limit = page(body)
    query, wanted = optional_text(body, "query"), optional_object(body, "filter")
    try:
        found = await (await store_of(request)).search(
            own(request, body.get("namespace_prefix") or [], allow_empty=True), query=query,
            filter=wanted or None, limit=limit, offset=offset)
    except StoreError as err:
        raise checks.BadRequest(str(err)) from None
    return JSONResponse({"items": [shown(request, i.as_json()) for i in found]})


async def namespaces(request: Request) -> Response:
    body = await body_of(request)
    refuse(body, {"prefix", "max_depth", "limit", "offset"})
    offset, limit = page(body, default_limit=100)
    depth = whole(body, "max_depth", 0, 1) if body.get("max_depth") is not None else None
    try:
        found = await (await store_of(request)).namespaces(own(request, body.get("prefix") or [], allow_empty=True))
    except StoreError as err:
        raise checks.BadRequest(str(err)) from None
    cut = 1 if scope_of(request) else 0
    listed = sorted({tuple(ns[cut:][:depth] if depth else ns[cut:]) for ns in found})
    return JSONResponse({"namespaces": [list(ns) for ns in listed[offset:offset + limit]]})
