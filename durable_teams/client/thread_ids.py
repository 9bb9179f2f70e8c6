"""Ids made from other ids (a fork's from its thread's, a fork of a fork's from the fork's), kept
within the length every door accepts (`MAX_THREAD_ID_CHARS`, the gateway's thread id rule), so an
id the product makes is one it accepts everywhere. Pure: no Temporal."""

from __future__ import annotations

import hashlib

__all__ = ["MAX_TEAM_PART_CHARS", "MAX_THREAD_ID_CHARS", "derived_id", "team_part"]

MAX_THREAD_ID_CHARS = 200
"""The longest thread id the gateway serves (durable_teams/gateway/core/requests.py THREAD_ID)."""
DIGEST_CHARS = 16
MAX_TEAM_PART_CHARS = 100
"""The most of an id a team's name takes (`team_part`): the rest is room for what follows it
(`-chat-<digest>-<mark>`, `-resp-<digest>`, ..., all under 100 characters)."""


def derived_id(base: str, suffix: str) -> str:
    """`base + suffix` when it fits in `MAX_THREAD_ID_CHARS`; else the start of `base`, a
    digest of the whole of it, then `suffix`: the same base always gives the same id, two
    bases two ids (however long the chain of forks), and the id still starts as `base` does."""
    whole = base + suffix
    if len(whole) <= MAX_THREAD_ID_CHARS:
        return whole
    digest = hashlib.sha256(base.encode()).hexdigest()[:DIGEST_CHARS]
    keep = MAX_THREAD_ID_CHARS - len(suffix) - DIGEST_CHARS - 1
    if keep < 1:
        raise ValueError(f"an id suffix of {len(suffix)} characters leaves no room for its base")
    return f"{base[:keep]}-{digest}{suffix}"


def team_part(team: str) -> str:
    """A team's name as the start of an id made for it (`<team>-resp-...`): the name itself,
    or, for a name over `MAX_TEAM_PART_CHARS` (a team's name has no limit), its start and a
    digest of the whole, so every id made for any team stays within `MAX_THREAD_ID_CHARS`."""
    if len(team) <= MAX_TEAM_PART_CHARS:
        return team
    digest = hashlib.sha256(team.encode()).hexdigest()[:DIGEST_CHARS]
    return f"{team[:MAX_TEAM_PART_CHARS - DIGEST_CHARS - 1]}-{digest}"
