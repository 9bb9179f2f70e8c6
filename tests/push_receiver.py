"""A real HTTP receiver of A2A push notifications for tests: a local aiohttp server that keeps
each POST (its headers and JSON body), answering the statuses it is given, then 200."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Receiver:
    url: str = ""
    received: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    """Statuses to answer the next POSTs with, in order (then 200)."""
    refusing: int = 0
    """While not 0, every POST is answered with this status (after `answers`)."""
    statuses: list[int] = field(default_factory=list)
    """What each POST in `received` was answered."""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def accepted(self) -> list[Any]:
        """The bodies of the POSTs answered with a 2xx."""
        return [body for (_, body), status in zip(self.received, self.statuses, strict=True) if status < 300]

    async def handle(self, request: web.Request) -> web.Response:
        status = self.answers.pop(0) if self.answers else self.refusing or 200
        self.received.append((dict(request.headers), await request.json()))
        self.statuses.append(status)
        self.arrived.set()
        return web.Response(status=status)


@asynccontextmanager
async def receiving() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/hook", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    receiver.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield receiver
    finally:
        await runner.cleanup()
