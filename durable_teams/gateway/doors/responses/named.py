"""What a Responses request names beyond its fields: the response a resent conversation
continues (one of our message items in it), the 404 for an unknown `previous_response_id` in
OpenAI's shape, a response the caller may see, and a question asked again
(durable_teams/gateway/responses.py answers the request)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request

from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.events import response_of_item
from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse, View


async def visible_response(gw: Gateway, ref: ResponseRef, scope: str | None) -> None:
    try:
        await gw.visible(ref.thread, scope)
    except ConversationNotFound:
        raise UnknownResponse(f"no response {ref.id!r}") from None


def asked_again(view: View, asking: str) -> View:
    """`view` with `asking` before its text (an unclear answer to its approval)."""
    if asking and view.text is not None:
        view.text = asking + view.text
    return view


@contextlib.contextmanager
def naming_previous() -> Iterator[None]:
    """An unknown response met here is the request's `previous_response_id` (OpenAI's 404)."""
    try:
        yield
    except UnknownResponse as unknown:
        if unknown.param is not None:
            raise
        raise UnknownResponse(f"Previous response with id {str(unknown).removeprefix('no response ')} "
                              "not found.", "previous_response_id") from None


async def resumed_response(gw: Gateway, sent: Any, request: Request) -> tuple[str, list[Any]] | None:
    """A resent conversation holding a response of ours this caller may read
    (`fields.resumed_from`) continues it, as `previous_response_id` naming it would: the
    response's id and the new items. (Without it, the conversation is matched as chats are.)"""
    found = fields.resumed_from(sent)
    ref = response_of_item(found[0]) if found else None
    if found is None or ref is None:
        return None
    try:
        await visible_response(gw, ref, scope_of(request))
        await state.read(gw, ref)
    except UnknownResponse:
        return None
    return ref.id, found[1]
