"""Tenancy as one concept (docs/architecture.md, "Tenants and users"): a conversation belongs to at most one tenant (a
gateway scope, or the tenant an operator names on the CLI or in the Python API) and speaks
for at most one end user inside it. Both are fixed when the conversation starts and kept in
its context variables under the two names below, so a fork, a nested team and every tool call
of the conversation carry them; the memory tools keep a tenant's and a user's memories apart
by them, and cached tool results never cross tenants (durable_teams/memory/).

Pure: no Temporal, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["TENANT", "TENANT_MEMO", "TENANT_NAME", "USER", "check_tenant", "tenancy_context", "tenant_of",
           "user_of"]

TENANT = "tenant_id"
"""The context variable naming the conversation's tenant (absent: no tenant, an operator's
or a library user's conversation)."""
TENANT_MEMO = "scope"
"""The memo key naming a conversation's tenant, which the gateway shows to that tenant's tokens
alone (durable_teams/gateway/core/scopes.py)."""
TENANT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""A tenant's name: a gateway scope's (1-64 letters, digits, '_', '.' or '-')."""
USER = "user_id"
"""The context variable naming the end user the conversation speaks for (the memory store's
`user_id`)."""


def _label(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)  # kept as given: a memory's namespace is the id exactly
    return text if text.strip() else None


def check_tenant(name: str) -> str:
    """`name`, or ValueError saying what a tenant's name may be."""
    if not isinstance(name, str) or not TENANT_NAME.fullmatch(name):
        raise ValueError(f"tenant {name!r}: a tenant's name is 1-64 letters, digits, '_', '.' or '-'")
    return name


def tenancy_context(tenant: str | None = None, user: str | None = None) -> dict[str, str]:
    """The context variables that start a conversation of `tenant` for `user` (either may be
    None or blank: then it is left out)."""
    found = {TENANT: _label(tenant), USER: _label(user)}
    return {k: v for k, v in found.items() if v is not None}


def tenant_of(context: Mapping[str, Any]) -> str | None:
    """The conversation's tenant, from its context variables (None: no tenant)."""
    return _label(context.get(TENANT))


def user_of(context: Mapping[str, Any]) -> str | None:
    """The end user the conversation speaks for, from its context variables (None: nobody named)."""
    return _label(context.get(USER))
