"""Ids made from other ids (a fork's from its thread's, a fork of a fork's from the fork's), kept
within the length every door accepts (`MAX_THREAD_ID_CHARS`, the gateway's thread id rule), so an
id the product makes is one it accepts everywhere. Pure: no Temporal."""

from __future__ import annotations

import hashlib

__all__ = ["MAX_THREAD_ID_CHARS", "derived_id"]

MAX_THREAD_ID_CHARS = 200
"""The longest thread id the gateway serves (durable_teams/gateway/requests.py THREAD_ID)."""
DIGEST_CHARS = 16


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
