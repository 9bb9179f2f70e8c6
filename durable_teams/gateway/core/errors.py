"""The gateway's error answers: every failure a JSON body with its status and type, never a
500 with a traceback for what a client or the server caused (a bug of ours is one log line and a
JSON 500)."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import (
    TRANSIENT,
    ConversationBusy,
    ConversationEnded,
    ConversationNotFound,
    EditRefused,
    ReplyRejected,
    TurnAbandoned,
    TurnRejected,
)
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.tenant_ids import in_own_words

log = logging.getLogger(__name__)


def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)



async def on_unknown_team(request: Request, exc: Exception) -> Response:
    """OpenAI's answer to an unknown model: 404 with code `model_not_found`."""
    return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error",
                                   "code": "model_not_found"}}, status_code=404)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    # a door's words name threads by their workflow ids, as the core's do: here by the caller's
    detail = in_own_words(scope_of(request), str(exc.detail))
    response = error(exc.status_code, detail, getattr(exc, "kind", "invalid_request_error"))
    response.headers.update(exc.headers or {})
    param = getattr(exc, "param", None)
    if param is not None:  # OpenAI's shape: the field the error is about
        response = JSONResponse({"error": {"message": detail, "type": "invalid_request_error",
                                           "param": param, "code": None}}, status_code=exc.status_code)
    return response


async def on_temporal_error(request: Request, exc: Exception) -> Response:
    """Typed outcomes as HTTP statuses instead of a 500 with a traceback; a thread named by the
    caller's id for it (durable_teams/gateway/core/tenant_ids.py; no request: an operator's words)."""
    scope = scope_of(request) if request is not None else None

    def answer(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return error(status, in_own_words(scope, message), kind)
    if isinstance(exc, ConversationBusy):
        response = answer(429, str(exc), "thread_busy")
        response.headers["Retry-After"] = "1"
        return response
    if isinstance(exc, WorkflowUpdateFailedError):  # the workflow refused the turn: why
        return answer(400, str(getattr(exc.cause, "message", exc.cause)), "turn_rejected")
    if isinstance(exc, TurnRejected):  # the same, for a turn sent as a signal (updates off)
        return answer(400, str(exc), "turn_rejected")
    if isinstance(exc, EditRefused):  # the person's to fix: the question stays open
        return answer(400, str(exc), "invalid_arguments")
    if isinstance(exc, ReplyRejected):
        return answer(409, str(exc), "reply_rejected")
    if isinstance(exc, TurnAbandoned):  # a rewind left the turn in the branch it abandoned
        return answer(409, str(exc), "turn_abandoned")
    if isinstance(exc, ConversationNotFound):  # a ConversationEnded: checked first
        return answer(404, str(exc), "not_found")
    if isinstance(exc, ConversationEnded):
        return answer(409, str(exc), "conversation_ended")
    if isinstance(exc, WorkflowQueryFailedError):
        return answer(409, f"the workflow could not answer: {exc.message}", "query_failed")
    assert isinstance(exc, RPCError)
    if exc.status == RPCStatusCode.NOT_FOUND:
        return answer(404, f"not found: {exc.message}", "not_found")
    if exc.status == RPCStatusCode.ALREADY_EXISTS:
        return answer(409, f"already exists: {exc.message}", "already_exists")
    if exc.status == RPCStatusCode.INVALID_ARGUMENT:
        return answer(400, f"the Temporal server refused the request: {exc.message}", "invalid_request_error")
    log.warning("the Temporal server refused a call (%s): %s", exc.status.name, exc.message)
    if exc.status in TRANSIENT:  # busy or briefly unreachable: worth sending again (a request that
        # changes state with its Idempotency-Key, so a call the server did take is not run twice)
        response = answer(503, f"the Temporal server is busy or unreachable: {exc.message or exc.status.name}; "
                              "try again", "temporal_unavailable")
        response.headers["Retry-After"] = "1"
        return response
    return answer(502, f"the Temporal server refused the call: {exc.message}", "temporal_error")


async def on_unexpected(request: Request, exc: Exception) -> Response:
    """A bug of ours, not the client's: one log line with the traceback, a JSON 500."""
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return error(500, "internal error (logged on the gateway)", "internal_error")
