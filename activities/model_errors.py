"""The one place that decides which model-endpoint errors Temporal retries.

408/409/429/5xx and connection errors are retried (honouring `retry-after`); 400/401/403/404/422
fail at once, with a message a user understands. The API key never appears in a message.
"""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

import openai
from temporalio.exceptions import ApplicationError

MAX_RETRY_AFTER = 60.0

_MEANING = {
    400: ("ModelBadRequest", "The model endpoint rejected the request as invalid (HTTP 400)."),
    401: ("ModelAuthError", "The model endpoint rejected the credentials (HTTP 401). Check OPENAI_API_KEY on the worker."),
    403: ("ModelAuthError", "The model endpoint refused access (HTTP 403). Check the API key's permissions for this model."),
    404: ("ModelNotFound", "The model endpoint answered 404: check the model name and OPENAI_BASE_URL."),
    408: ("ModelTimeout", "The model endpoint timed out (HTTP 408)."),
    409: ("ModelConflict", "The model endpoint reported a conflict (HTTP 409)."),
    422: ("ModelBadRequest", "The model endpoint could not process the request (HTTP 422)."),
    429: ("ModelRateLimited", "The model endpoint is rate limiting (HTTP 429)."),
}


def retry_after(headers: object) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after`, capped."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = get(name)
        if value is None:
            continue
        try:
            return min(float(value) * scale, MAX_RETRY_AFTER)
        except ValueError:
            continue
    return None


def _server_text(err: openai.APIStatusError) -> str:
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return err.message or ""


def raise_for_openai_error(err: Exception, model: str = "") -> NoReturn:
    """Re-raise an openai error as an ApplicationError Temporal retries, or not."""
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        kind, text = _MEANING.get(
            status,
            ("ModelServerError", f"The model endpoint failed (HTTP {status}).")
            if status >= 500
            else ("ModelBadRequest", f"The model endpoint rejected the request (HTTP {status})."),
        )
        retryable = status in (408, 409, 429) or status >= 500
        should_retry = err.response.headers.get("x-should-retry")
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        if status == 404 and model:
            text += f" (model {model!r})"
        detail = _server_text(err)
        delay = retry_after(err.response.headers) if retryable else None
        raise ApplicationError(
            f"{text} {detail}".strip(),
            type=kind,
            non_retryable=not retryable,
            next_retry_delay=timedelta(seconds=delay) if delay is not None else None,
        ) from None
    if isinstance(err, (openai.APIConnectionError, openai.APITimeoutError)):
        raise ApplicationError(
            f"Could not reach the model endpoint: {err}", type="ModelConnectionError"
        ) from None
    if isinstance(err, openai.APIResponseValidationError):
        raise ApplicationError(
            f"The model endpoint sent a response we cannot read: {err}",
            type="ModelBadResponse",
            non_retryable=True,
        ) from None
    raise err
