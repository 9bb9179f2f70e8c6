"""Teams as A2A agents: `/a2a/{team}` and its card (routes.py; the `a2a` extra; docs/a2a.md)."""

from __future__ import annotations

import importlib.util

from durable_teams.gateway.core.mounts import Mount, Serving


def mount(serving: Serving) -> Mount | None:
    """Each team with a card as an agent (scoped tokens keep to their scope's tasks); None
    without cards or without the `a2a` extra. `serving.options["a2a"]`: the push notifications'
    options (`PushOptions`; None: from the environment)."""
    if not serving.cards or importlib.util.find_spec("a2a") is None:
        return None
    from durable_teams.gateway.doors.a2a.routes import a2a_routes

    routes = a2a_routes(serving.gateway, serving.cards, bearer=serving.bearer, push=serving.options.get("a2a"))
    return Mount(list(routes))
