"""The one place that removes secrets from text before it is logged or recorded.

Every error message built from what a model endpoint sent back (its body, echoed headers, a
connection error) goes through `scrub`, and every printed endpoint URL through `mask_url`.
Pure string functions (no I/O beyond reading the environment for the worker's own secrets),
and a logging filter that applies `scrub` to the model client's own log lines.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "***"

_SECRET_NAMES = (
    r"proxy-authorization|authorization|x-api-key|x-goog-api-key|api-key|api_key|apikey"
    r"|set-cookie|cookie|access_token|refresh_token|client_secret|password"
)
_HEADER = re.compile(
    rf"""(?P<name>\b(?:{_SECRET_NAMES}))(?P<q>\\?["']?)(?P<sep>\s*[:=]\s*)"""
    r"""(?P<value>"[^"\r\n]*"?|'[^'\r\n]*'?|[^\r\n]*)""",
    re.IGNORECASE,
)
"""A secret-bearing header or field, as a header line, JSON, a Python repr or a query string.
An unquoted value runs to the end of the line: scrubbing too much beats leaking."""
_BEARER = re.compile(r"\b(bearer|basic)\s+[^\s\"',;]+", re.IGNORECASE)
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<user>[^/@\s:]*):[^/@\s]*@",
                       re.IGNORECASE)
_QUERY = re.compile(r"(?P<key>[?&;][\w.\-]*(?:key|token|sig|secret|auth|pass|pwd|session|credential|jwt)"
                    r"[\w.\-]*=)[^&;#\s\"']+", re.IGNORECASE)
"""A query parameter whose name says it holds a secret (`?token=`, `&api_key=`, `?X-Amz-Signature=`)."""


def _header_value(match: re.Match[str]) -> str:
    value = match["value"]
    quote_char = value[:1] if value[:1] in "\"'" else ""
    return f"{match['name']}{match['q']}{match['sep']}{quote_char}{MASK}{quote_char}"


def env_secrets() -> list[str]:
    """The worker's own secrets: the API key and any password in OPENAI_BASE_URL."""
    found = [os.environ.get("OPENAI_API_KEY", "")]
    password = urlsplit(os.environ.get("OPENAI_BASE_URL", "")).password
    if password:
        found += [password, unquote(password)]
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with known secrets (given, and the worker's own) and anything shaped like a
    credential (secret headers, bearer/basic tokens, `sk-...` keys, URL passwords, key query
    parameters) replaced by `***`."""
    for secret in sorted({s for s in [*secrets, *env_secrets()] if len(s) >= 4}, key=len,
                         reverse=True):
        text = text.replace(secret, MASK).replace(quote(secret, safe=""), MASK)
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    text = _HEADER.sub(_header_value, text)
    text = _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)
    text = _SK_KEY.sub(f"sk-{MASK}", text)
    return _QUERY.sub(lambda m: f"{m['key']}{MASK}", text)


def mask_url(url: str) -> str:
    """`url` with the password of its user info (and secret query values) masked, for printing:
    `https://user:secret@host/v1` becomes `https://user:***@host/v1`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:{MASK}@{netloc.rpartition('@')[2]}"
    return scrub(urlunsplit(parts._replace(netloc=netloc)))


class ScrubFilter(logging.Filter):
    """Scrubs each record of the loggers it is added to (the HTTP client logs every request's
    URL at INFO level, a password in `OPENAI_BASE_URL` included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


SCRUBBED_LOGGERS = ("httpx", "httpx2", "openai", "openai._base_client")
_FILTER = ScrubFilter()


def scrub_client_logs() -> None:
    """Add the scrubbing filter to the model client's loggers (once; safe to call again)."""
    for name in SCRUBBED_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
