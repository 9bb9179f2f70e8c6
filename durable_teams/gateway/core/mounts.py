"""What a door gives the app that mounts it (durable_teams/gateway/asgi.py): its routes, what
runs while the app serves (an MCP session manager, say) and how its own errors answer. A door
is one function, `mount(serving) -> Mount | None` (None: not served here, an optional extra
missing), in its package's `__init__.py`; the app mounts a list of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.gateway.core.threads import Gateway

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


@dataclass(frozen=True)
class Serving:
    """What the app serves with: the threads (`gateway`), what the teams say of themselves
    (`cards`), whether callers show tokens (`bearer`), and a door's own options by the door's
    name (the A2A door's push options under "a2a")."""

    gateway: Gateway
    cards: Sequence[TeamCard] = ()
    bearer: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Mount:
    """A door as the app mounts it."""

    routes: list[BaseRoute]
    lifespans: list[Callable[[], AbstractAsyncContextManager[None]]] = field(default_factory=list)
    """Entered while the app serves, left when it stops."""
    errors: dict[type[Exception], ErrorHandler] = field(default_factory=dict)
    """How the door's own exceptions answer (the app's answer every other)."""


Door = Callable[[Serving], "Mount | None"]
