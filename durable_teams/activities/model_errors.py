"""The one place that decides which model-endpoint errors Temporal retries.

The openai client runs with `max_retries=0`, so every failure reaches the activity and Temporal's
retry policy owns retries (each attempt is visible in the history). Modelled on Temporal's
openai_agents contrib `_raise_for_openai_status`: 408/409/429/5xx and connection errors are
retried (honouring `x-should-retry` and `retry-after-ms`/`retry-after`); 400/401/403/404/422 and
other 4xx fail at once, with a message a user understands. The API key never appears in a
message: any text taken from the server is scrubbed of the key the request carried.
"""

from __future__ import annotations

import email.utils
import importlib
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from temporalio.exceptions import ApplicationError

from durable_teams.encryption.redact import scrub
from durable_teams.workflows.messages import ModelRequest, ModelResponse

from .model_parse import BadModelResponse

if TYPE_CHECKING:
    import openai

MAX_RETRY_AFTER = 60.0
"""Cap, in seconds, on a server's `retry-after` (a misbehaving server cannot park a turn)."""

MAX_DETAIL = 500
"""Characters of the server's error text kept (a proxy may answer with a whole HTML page)."""

_MEANING: dict[int, tuple[str, str]] = {
    400: ("ModelBadRequest", "The model endpoint rejected the request as invalid (HTTP 400)."),
    401: ("ModelAuthError", "The model endpoint rejected the credentials (HTTP 401). "
                            "Check OPENAI_API_KEY on the worker."),
    403: ("ModelAuthError", "The model endpoint refused access (HTTP 403). Check that the API "
                            "key on the worker may use this model."),
    408: ("ModelTimeout", "The model endpoint timed out (HTTP 408)."),
    409: ("ModelConflict", "The model endpoint reported a conflict (HTTP 409)."),
    422: ("ModelBadRequest", "The model endpoint could not process the request (HTTP 422)."),
    429: ("ModelRateLimited", "The model endpoint is rate limiting or out of quota (HTTP 429)."),
}


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), capped
    at MAX_RETRY_AFTER; None when absent or unreadable."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    value = get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, min(float(value) / 1000.0, MAX_RETRY_AFTER))
        except ValueError:
            pass
    value = get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, min(seconds, MAX_RETRY_AFTER))


def request_secrets(err: Exception) -> list[str]:
    """The credentials this request carried, to scrub from messages (the worker's own key and
    URL password are scrubbed by `scrub` itself)."""
    found: list[str] = []
    request = getattr(err, "request", None)
    headers = getattr(request, "headers", None) if request is not None else None
    if headers is not None:
        auth = headers.get("authorization") or ""
        found.append(auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else auth)
        found += [headers.get("api-key") or "", headers.get("x-api-key") or ""]
    return [s for s in found if len(s) >= 4]


def _scrub(text: str, err: Exception) -> str:
    return scrub(text, request_secrets(err))


def _server_text(err: openai.APIStatusError) -> str:
    """The server's own error message (`{"error": {"message": ...}}` or the SDK's summary)."""
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str) and inner:
            return inner
    return err.message or ""


def _error_code(err: openai.APIStatusError) -> str:
    body = err.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    return str(inner.get("code") or "") if isinstance(inner, dict) else ""


def _where(err: Exception) -> str:
    """Host and path of the request, without query string (never credentials)."""
    request = getattr(err, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return ""
    return f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"


def status_meaning(status: int, model: str = "", where: str = "") -> tuple[str, str, bool]:
    """(error type, readable text, retryable) for an HTTP status from the model endpoint."""
    if status == 404:
        return "ModelNotFound", (
            f"The model endpoint answered HTTP 404 (not found) for model {model or '?'!r} at "
            f"{where}. Check the model name and OPENAI_BASE_URL on the worker."), False
    retryable = status in (408, 409, 429) or status >= 500
    if status in _MEANING:
        return (*_MEANING[status], retryable)
    if status >= 500:
        return "ModelServerError", f"The model endpoint failed (HTTP {status}).", True
    return "ModelBadRequest", f"The model endpoint rejected the request (HTTP {status}).", False


def raise_for_openai_error(exc: Exception, model: str = "", timeout: float | None = None,
                           ) -> NoReturn:
    """Re-raise an openai error as an ApplicationError Temporal retries, or not.

    `model` (optional) is named in the message of a 404, `timeout` (seconds) in that of a
    timeout. Anything that is not an openai API error is re-raised unchanged.
    """
    import openai  # loaded already: the error came from its client (activities/model.py)

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        kind, text, retryable = status_meaning(status, model, _where(exc))
        if status == 429 and _error_code(exc) == "insufficient_quota":
            kind, retryable = "ModelQuotaExceeded", False  # waiting does not buy quota
            text = ("The model endpoint reports the account is out of quota (HTTP 429). "
                    "Check the plan and billing of the key on the worker.")
        should_retry = (exc.response.headers.get("x-should-retry") or "").lower()
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        detail = " ".join(_scrub(_server_text(exc), exc).split())[:MAX_DETAIL]
        delay = retry_after(exc.response.headers) if retryable else None
        raise ApplicationError(
            f"{text} Server said: {detail}" if detail else text,
            type=kind,
            non_retryable=not retryable,
            next_retry_delay=timedelta(seconds=delay) if delay is not None else None,
        ) from None
    # openai's aiohttp transport reports every aiohttp connection error (a dropped connection,
    # a refused one) as a ConnectTimeout, which the client raises as APITimeoutError
    dropped = _aiohttp_cause(exc)
    if dropped is not None and isinstance(dropped, TimeoutError):
        dropped = None
    if isinstance(exc, openai.APITimeoutError) and dropped is None:
        raise_timeout(_where(exc), timeout)
    if isinstance(exc, openai.APIConnectionError):
        cause = dropped or exc.__cause__
        reason = _scrub(f"{type(cause).__name__}: {cause}" if cause else exc.message, exc)
        raise ApplicationError(
            f"Could not reach the model endpoint at {_where(exc)} ({reason}). Check "
            "OPENAI_BASE_URL and that the server is running.",
            type="ModelConnectionError",
        ) from None
    if isinstance(exc, openai.APIResponseValidationError):
        raise ApplicationError(
            f"The model endpoint sent a response that is not a Chat Completion: "
            f"{_scrub(exc.message, exc)}",
            type="ModelBadResponse",
            non_retryable=True,
        ) from None
    raise exc


def _aiohttp_cause(exc: BaseException) -> BaseException | None:
    """The aiohttp error behind `exc`, if any (openai's aiohttp transport raises one)."""
    cause: BaseException | None = exc
    for _ in range(10):  # a bounded walk: a chain of causes may loop
        if cause is None or type(cause).__module__.startswith("aiohttp"):
            return cause
        cause = cause.__cause__
    return None


def _http_module() -> Any:
    """The HTTP library the openai client uses: httpx2 in newer releases, httpx before."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_HTTP = _http_module()


def raise_for_read_error(exc: Exception, where: str) -> None:
    """An HTTP-library error while the body was read (the openai client does not wrap these):
    a broken connection is retried, a body that cannot be decoded is not. Returns for
    anything else."""
    if _HTTP is None or not isinstance(exc, _HTTP.HTTPError):
        return
    reason = scrub(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, _HTTP.TransportError):
        raise ApplicationError(
            f"The connection to the model endpoint at {where} broke while its response was "
            f"read ({reason}).", type="ModelConnectionError") from None
    raise ApplicationError(
        f"The model endpoint at {where} sent a response that could not be decoded ({reason}).",
        type="ModelBadResponse", non_retryable=True) from None


def raise_timeout(where: str, timeout: float | None) -> NoReturn:
    """A model endpoint that did not answer within this attempt's time: retried."""
    within = f" within {round(timeout, 1):g} s" if timeout else " in time"
    raise ApplicationError(
        f"The model endpoint at {where} did not answer{within}.", type="ModelTimeout",
    ) from None


def raise_bad_response(err: BadModelResponse, attempt: int) -> NoReturn:
    """A response with no usable answer: not retried, retried once (on attempt 1 only), or,
    for an error object carrying an HTTP status, retried as that status would be."""
    retryable = (err.retry == "once" and attempt <= 1) or (
        err.retry == "status" and status_meaning(err.status)[2])
    kind = status_meaning(err.status)[0] if err.retry == "status" else err.kind
    raise ApplicationError(err.message, type=kind, non_retryable=not retryable) from None


_EMPTY_WHY = {
    "content_filter": "the endpoint's content filter withheld it",
    "length": "it reached the output token limit before writing any text",
}


def refuse_empty(response: ModelResponse, req: ModelRequest, attempt: int) -> None:
    """An answer with no text and no tool calls is never a silent "completed": it fails the
    attempt, retried once, then fails the call for good (the turn fails with this message)."""
    if response.message.tool_calls or (response.message.content or "").strip():
        return
    reason = response.finish_reason
    why = _EMPTY_WHY.get(reason or "", "no text and no tool calls")
    tried = " It was asked twice." if attempt > 1 else ""
    raise ApplicationError(
        f"The model {req.model!r} gave {req.agent} an empty answer ({why}; finish_reason "
        f"{reason!r}).{tried}",
        type="EmptyModelResponse",
        non_retryable=attempt > 1,
    )
