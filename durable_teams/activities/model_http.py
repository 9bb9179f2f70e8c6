"""Settings and clocks of a model call's HTTP request: which HTTP client the openai client
pools connections with, and how long this attempt's request may take."""

from __future__ import annotations

import os
import urllib.parse
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

HTTP_CLIENT_ENV = "DURABLE_TEAMS_HTTP_CLIENT"


class ModelSettingError(ValueError):
    """A model setting in the environment that does not parse."""


def http_client_setting() -> str:
    """`$DURABLE_TEAMS_HTTP_CLIENT`: "aiohttp" (the default) or "httpx"."""
    value = os.environ.get(HTTP_CLIENT_ENV, "").strip().lower() or "aiohttp"
    if value not in ("aiohttp", "httpx"):
        raise ModelSettingError(f"{HTTP_CLIENT_ENV} must be aiohttp or httpx, not {value!r}")
    return value


def pooled_http_client(base_url: str | None) -> Any:
    """The openai client's aiohttp transport (`openai.DefaultAioHttpClient`, from the
    `openai[aiohttp]` dependency), or None for the client's default (httpx). httpx's pool
    checks every idle connection with two system calls each time a request takes a connection
    or gives one back: with hundreds of model calls in flight that cost more of a worker's CPU
    than anything else in the call (`python -m bench.scale latency --profile`). aiohttp's pool
    takes an idle connection without scanning the rest. httpx stays for a base URL that
    carries credentials (aiohttp refuses them beside the API key's header), and when
    DURABLE_TEAMS_HTTP_CLIENT=httpx."""
    if http_client_setting() == "httpx" or (base_url and "@" in urllib.parse.urlsplit(base_url).netloc):
        return None
    import openai  # only for an OpenAI-backed model (activities/model.py: the CLI need not load it)

    factory = getattr(openai, "DefaultAioHttpClient", None)  # in newer openai releases
    try:
        return factory() if factory is not None else None
    except RuntimeError:  # this openai release's aiohttp extra is not installed
        return None


def current_attempt() -> int:
    """The activity's attempt number (1 outside an activity)."""
    return activity.info().attempt if activity.in_activity() else 1


def attempt_timeout(default: float) -> float:
    """Seconds this HTTP request may take: `default`, but a little under what is left of the
    activity attempt (start-to-close and schedule-to-close), so the endpoint's silence is
    reported by us, in words, before Temporal's own timeout cuts the attempt."""
    if not activity.in_activity():
        return default
    info = activity.info()
    now = datetime.now(UTC)
    deadlines = []
    if info.start_to_close_timeout:
        deadlines.append(info.started_time + info.start_to_close_timeout)
    if info.schedule_to_close_timeout:
        deadlines.append(info.scheduled_time + info.schedule_to_close_timeout)
    if not deadlines:
        return default
    left = (min(deadlines) - now).total_seconds()
    return max(0.5, min(default, left - min(5.0, left * 0.1)))
