"""Which live hub a process uses: the Redis one `DURABLE_TEAMS_LIVE_URL` names, else its own.
Apart from both hubs, so neither imports the other."""

from __future__ import annotations

import os
from typing import Any

from durable_teams.live.hub import LIVE, LIVE_URL_ENV, LiveHub


def hub_from_env(codec: Any = None, environ: dict[str, str] | None = None) -> LiveHub:
    """The hub `DURABLE_TEAMS_LIVE_URL` names (Redis), else this process's. `codec` (the
    client's payload codec) encrypts deltas on the broker when it is an EncryptionCodec."""
    url = (environ if environ is not None else os.environ).get(LIVE_URL_ENV, "").strip()
    if not url:
        return LIVE
    from durable_teams.live.redis_hub import RedisHub  # the optional `redis` package, when asked

    return RedisHub(url, codec=codec)
