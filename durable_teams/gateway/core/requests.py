"""What the gateway accepts from a client, checked before anything reaches Temporal: a refused
request is a 4xx JSON error and changes nothing.

- bodies: JSON objects, at most `MAX_DEPTH` deep, no integer over `MAX_DIGITS` digits, no
  number JSON cannot hold, valid UTF-8;
- thread ids: `THREAD_ID_RULE`, so every id the gateway creates can be named again in a URL,
  a header and the CLI;
- texts: strings without lone surrogates (they cannot be encoded), under the workflow's size
  limit;
- keys (`Idempotency-Key`): printable ASCII, at most `MAX_KEY_CHARS`.

Pure: no Temporal, no Starlette beyond its HTTPException.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.exceptions import HTTPException

from durable_teams.client.thread_ids import MAX_THREAD_ID_CHARS
from durable_teams.workflows.intake import MAX_ID_CHARS, MAX_TURN_BYTES

MAX_DEPTH = 32
"""Nesting of arrays and objects in a request body; ours are two or three deep."""
MAX_DIGITS = 100
"""Digits of an integer in a request body (Python refuses above 4,300 with an error)."""
THREAD_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:@=+-]{{0,{MAX_THREAD_ID_CHARS - 1}}}")
THREAD_ID_RULE = (f"1 to {MAX_THREAD_ID_CHARS} characters: letters, digits and . _ : @ = + -, starting "
                  "with a letter or digit")
KEY = re.compile(r"[\x21-\x7e]{1,200}")
MAX_KEY_CHARS = 200


class BadRequest(HTTPException):
    """A 400 with the reason, and the field it is about when there is one."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(status, message)


class FieldError(BadRequest):
    """A 400 for a field a request cannot take: `param` names the field (OpenAI's shape,
    durable_teams/gateway/core/errors.py)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def parse_body(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `BadRequest` saying what is wrong with it."""
    if not raw.strip():
        raise BadRequest("the body is empty: send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not valid UTF-8") from None
    if _too_deep(text):
        raise BadRequest(f"the body nests arrays or objects over {MAX_DEPTH} levels deep")
    try:
        body = json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float,
                          parse_constant=_no_constant)
    except (json.JSONDecodeError, RecursionError):
        raise BadRequest("the body is not JSON") from None
    except ValueError as err:
        raise BadRequest(str(err)) from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def _too_deep(text: str) -> bool:
    """Whether brackets (outside strings) nest deeper than MAX_DEPTH: checked before parsing,
    so 10,000 nested brackets cost one pass, not a RecursionError."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"the body has an integer of over {MAX_DIGITS} digits")
    return int(digits)


def _bounded_float(digits: str) -> float:
    value = float(digits)
    if len(digits) > MAX_DIGITS or value in (float("inf"), float("-inf")):
        raise ValueError(f"the body has a number JSON cannot hold: {digits[:20]}...")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"the body has {name}, which is not JSON")


def encodable(text: str, field: str) -> str:
    """`text`, or `BadRequest` when it holds a lone surrogate (UTF-8 cannot encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(f"'{field}' holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return text


def text_field(body: dict[str, Any], name: str, *, required: bool = True,
               max_bytes: int | None = None) -> str | None:
    """A string field: present and non-blank when `required`, text that can be encoded, and
    at most `max_bytes` bytes of UTF-8 (413 above)."""
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadRequest(f"'{name}' must be a non-empty string")
    encodable(value, name)
    if max_bytes is not None and len(value.encode("utf-8")) > max_bytes:
        raise BadRequest(f"'{name}' is over {max_bytes:,} bytes", status=413)
    return value


def end_user(body: dict[str, Any]) -> str | None:
    """`user`: the end user a new thread speaks for (docs/architecture.md, "Tenants and users"), at most `MAX_ID_CHARS`
    characters; None when left out or blank."""
    user = text_field(body, "user", required=False)
    if user is not None and len(user) > MAX_ID_CHARS:
        raise BadRequest(f"'user' is over {MAX_ID_CHARS} characters")
    return user if user is not None and user.strip() else None


def turn_text(body: dict[str, Any]) -> str:
    text = text_field(body, "text", max_bytes=MAX_TURN_BYTES)
    assert text is not None
    return text


def sender(body: dict[str, Any]) -> str | None:
    name = text_field(body, "sender", required=False)
    if name is not None and len(name) > MAX_ID_CHARS:
        raise BadRequest(f"'sender' is over {MAX_ID_CHARS} characters")
    return name


def thread_id(value: str, where: str = "thread id") -> str:
    """`value` if it is a thread id this gateway can serve, else `BadRequest` with the rule."""
    if not THREAD_ID.fullmatch(value):
        raise BadRequest(f"invalid {where}: {THREAD_ID_RULE}")
    return value


def idempotency_key(value: str | None) -> str | None:
    """The `Idempotency-Key` header, checked: printable ASCII without spaces."""
    if value is None:
        return None
    if not KEY.fullmatch(value):
        raise BadRequest(f"invalid Idempotency-Key: 1 to {MAX_KEY_CHARS} printable ASCII "
                         "characters without spaces")
    return value


def start_index(value: str | None) -> int:
    """`?start=`: a log index, 0 or more."""
    if value is None or value == "":
        return 0
    if not (value.isascii() and value.isdigit()) or len(value) > 12:
        raise BadRequest("'start' must be a whole number, 0 or more")
    return int(value)
