"""Tokens and what each may see: operator tokens see every thread, a scoped token only the
threads started with a token of its scope (a tenant: an app or front end sharing the gateway).

Declared as `durable-teams serve` reads them (docs/gateway.md):

- `DURABLE_TEAMS_GATEWAY_TOKENS=t1,t2`: operator tokens (the form from before scopes: every
  existing deployment keeps seeing everything).
- `DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS=shop:t3,crm:t4`: `NAME:SECRET` pairs; the token sees the
  threads started with any token named NAME (two tokens of one name: a rotation).
- `--tokens-file PATH`: one token a line, `operator SECRET` or `scoped NAME SECRET` (`#` comments),
  so no secret sits in the environment or on the command line.

A thread keeps its scope's NAME in its memo (`SCOPE_MEMO`, never the secret), so every gateway
process enforces it, after a restart too. A thread started through the Temporal client or the
CLI has none: operator tokens see it, scoped tokens do not.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from durable_teams.workflows.tenancy import TENANT_MEMO, TENANT_NAME

TOKENS_ENV = "DURABLE_TEAMS_GATEWAY_TOKENS"
SCOPED_TOKENS_ENV = "DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS"
SCOPE_MEMO = TENANT_MEMO
"""The memo key holding a thread's scope name (absent: an operator's or a client's thread):
a scope is a tenant (docs/architecture.md, "Tenants and users")."""
NAME = TENANT_NAME


class TokenError(ValueError):
    """A token declaration that cannot be read (the message says which and why, never the secret)."""


@dataclass(frozen=True)
class Token:
    """A bearer token: `scope` None for an operator token (sees every thread), else the name
    of the threads it sees."""

    secret: str
    scope: str | None = None

    @property
    def caller(self) -> str:
        """A short, stable name for the caller (a digest: never the token)."""
        return "token:" + hashlib.sha256(self.secret.encode()).hexdigest()[:16]

    def __repr__(self) -> str:  # never the secret in a log or a traceback
        return f"Token(scope={self.scope!r}, caller={self.caller!r})"


def operator_tokens(value: str | None = None) -> list[Token]:
    """`DURABLE_TEAMS_GATEWAY_TOKENS` (comma-separated secrets), as operator tokens."""
    raw = os.environ.get(TOKENS_ENV, "") if value is None else value
    return [Token(t.strip()) for t in raw.split(",") if t.strip()]


def scoped_tokens(value: str | None = None) -> list[Token]:
    """`DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS` (comma-separated `NAME:SECRET`)."""
    raw = os.environ.get(SCOPED_TOKENS_ENV, "") if value is None else value
    found = []
    for n, entry in enumerate(e.strip() for e in raw.split(",")):
        if not entry:
            continue
        name, sep, secret = entry.partition(":")
        found.append(_scoped(name, secret if sep else "", f"{SCOPED_TOKENS_ENV} entry {n + 1}"))
    return found


def tokens_file(path: str) -> list[Token]:
    """A tokens file: `operator SECRET` or `scoped NAME SECRET` a line, `#` comments."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise TokenError(f"--tokens-file {path!r}: {getattr(err, 'strerror', None) or err}") from None
    found = []
    for n, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        at = f"--tokens-file {path!r} line {n}"
        if not words:
            continue
        if words[0] == "operator" and len(words) == 2:
            found.append(Token(words[1]))
        elif words[0] == "scoped" and len(words) == 3:
            found.append(_scoped(words[1], words[2], at))
        else:
            raise TokenError(f"{at}: expected 'operator SECRET' or 'scoped NAME SECRET'")
    return found


def _scoped(name: str, secret: str, at: str) -> Token:
    if not NAME.fullmatch(name):
        raise TokenError(f"{at}: a scope name is 1-64 letters, digits, '_', '.' or '-'")
    if not secret.strip():
        raise TokenError(f"{at}: no secret after the scope name {name!r}")
    return Token(secret.strip(), name)


def check_tokens(tokens: Iterable[Token]) -> list[Token]:
    """The tokens, refusing one secret declared with two scopes (which would it see?)."""
    seen: dict[str, str | None] = {}
    kept = []
    for token in tokens:
        if token.secret in seen:
            if seen[token.secret] != token.scope:
                raise TokenError(f"a token ({token.caller}) is declared with two scopes")
            continue
        seen[token.secret] = token.scope
        kept.append(token)
    return kept


def as_tokens(tokens: Iterable[str | Token]) -> list[Token]:
    """Plain strings are operator tokens (what `create_app(tokens=[...])` always took)."""
    return check_tokens(t if isinstance(t, Token) else Token(t) for t in tokens)


def sees(scope: str | None, memo: Mapping[str, Any]) -> bool:
    """Whether a caller of `scope` (None: an operator) may see a thread with this memo."""
    return scope is None or memo.get(SCOPE_MEMO) == scope


def caller_identity(state: Mapping[str, Any] | None) -> str | None:
    """The end user a door with no field for one speaks for (A2A, MCP): the caller's token
    (its digest, `Token.caller`), so two tokens of one scope are two users of one tenant;
    None without a token (docs/architecture.md, "Tenants and users")."""
    caller = state.get("caller") if isinstance(state, Mapping) else None
    return caller if isinstance(caller, str) and caller.startswith("token:") else None


def scope_of(request: Any) -> str | None:
    """A request's scope (set by durable_teams/gateway/core/auth.py): the threads its caller sees
    (None: an operator, who sees every thread)."""
    return getattr(request.state, "scope", None)


def caller_scope(request: Any) -> str:
    """Whose chat families a caller's requests continue: its scope's (any token of a scoped
    name), else its token's (a digest of it); "" on a gateway without tokens."""
    tenant = scope_of(request)
    if tenant is not None:
        return f"scope:{tenant}"
    caller = getattr(request.state, "caller", "")
    return caller if caller.startswith("token:") else ""
