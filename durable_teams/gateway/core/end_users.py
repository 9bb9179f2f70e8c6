"""The end user an OpenAI-shaped request speaks for (the chat and Responses doors): OpenAI's
`user`, or its newer `safety_identifier` (docs/architecture.md, "Tenants and users")."""

from __future__ import annotations

import json
from typing import Any

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.requests import FieldError


def check_end_user(body: dict[str, Any]) -> None:
    """`user` and `safety_identifier`, when sent: strings of at most `MAX_ID_CHARS` characters
    (the end user a new thread speaks for)."""
    for field in ("user", "safety_identifier"):
        user = body.get(field)
        if user is not None and (not isinstance(user, str) or len(user) > checks.MAX_ID_CHARS):
            raise FieldError(f"'{field}' must be a string of at most {checks.MAX_ID_CHARS} characters", field)
        if isinstance(user, str):
            checks.encodable(user, field)


def end_user(body: dict[str, Any]) -> str | None:
    """OpenAI's `user`, or its newer `safety_identifier` (checked by `check_fields`): None when
    absent, empty or blank, which all mean the same (no end user named), for the thread's memo
    and its chat key alike. Both sent: both, as one id."""
    ids = [value for field in ("user", "safety_identifier")
           if isinstance(value := body.get(field), str) and value.strip()]
    if len(ids) == 2:
        return json.dumps(ids)
    return ids[0] if ids else None
