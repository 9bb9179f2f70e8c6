"""The native HTTP API: /threads, its turns, events, questions, checkpoints and forks, and the
web inbox (routes.py)."""

from __future__ import annotations

from durable_teams.gateway.core.mounts import Mount, Serving


def mount(serving: Serving) -> Mount:
    from durable_teams.gateway.doors.native.routes import ROUTES

    return Mount(list(ROUTES))
