"""MCP sessions on the worker: one persistent session per server per worker (the default), or
a fresh one for every use (`session="per_call"`).

The SDK's client enters anyio task groups that must be exited by the task that entered them,
so a persistent session is owned by a long-lived task of its own: it opens the session, hands
the connected client out and waits to be told to close it. Activities, each on its own task,
send their requests over that client; the SDK correlates concurrent requests by id, so they
need no lock. A session whose connection has closed (its server died) is replaced by a new one
on its next use, before anything is sent; `close()` ends them all when the worker stops.

An HTTP session whose server has gone away learns it only from a request: its POST cannot
connect, and the SDK fails every request in flight with "Connection closed". When that request
was the only one in flight, it was not sent (`Lease.lost`), so it may be tried again safely.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from durable_teams.teams.mcp_servers import MCPServer


def could_not_connect(err: BaseException | None) -> bool:
    """Whether `err` (a session's end) is a connection to the server that could not be made:
    httpx's ConnectError or ConnectTimeout (by name: the SDK may use httpx or its fork)."""
    while err is not None and getattr(err, "exceptions", None):
        err = err.exceptions[0]  # type: ignore[attr-defined]
    return err is not None and type(err).__module__.startswith("httpx") and any(
        cls.__name__ in ("ConnectError", "ConnectTimeout") for cls in type(err).__mro__)


def connection_closed(client: Any) -> bool:
    """Whether `client`'s connection has closed (its server died or hung up). The SDK keeps
    this on its dispatcher, which it does not publish; without it, a dead session is noticed
    when a request fails (`Sessions.lost`)."""
    session = getattr(client, "_session", None)
    return session is None or bool(getattr(getattr(session, "_dispatcher", None), "_closed", False))


class _Owned:
    """One open session and the task that owns it."""

    def __init__(self, definition: MCPServer):
        self.definition = definition
        self.ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.in_flight = 0
        """Uses of the session under way."""
        self.failure: BaseException | None = None
        """What ended the session, once it has ended on its own (its transport failed)."""
        # its own context: nothing of the activity that happened to open it (cancellation,
        # Temporal's activity context) may reach a task that outlives that activity
        self.task = asyncio.create_task(self._own(), name=f"mcp session {definition.name}",
                                        context=contextvars.Context())

    async def _own(self) -> None:
        try:
            async with self.definition.client() as client:
                self.ready.set_result(client)
                await self.stop.wait()
        except BaseException as err:  # noqa: BLE001 - told to whoever waits to connect
            if not self.ready.done():
                self.ready.set_exception(err)
            else:
                self.failure = err  # its transport failed: a lease may ask why (`Lease.lost`)
            if isinstance(err, asyncio.CancelledError):
                raise

    def ended(self) -> bool:
        """Whether this session cannot serve another request: it failed to open, its task
        ended, or its connection closed."""
        if not self.ready.done():
            return False
        return (self.ready.cancelled() or self.ready.exception() is not None or self.task.done()
                or connection_closed(self.ready.result()))

    async def client(self) -> Any:
        return await asyncio.shield(self.ready)  # a caller's cancel must not cancel the opening

    async def close(self) -> None:
        self.stop.set()
        await asyncio.gather(self.task, return_exceptions=True)
        if self.ready.done() and not self.ready.cancelled():
            self.ready.exception()  # read, so an opening nobody awaited is not logged


class Lease:
    """A connected client for one use."""

    def __init__(self, sessions: Sessions, definition: MCPServer, client: Any,
                 owned: _Owned | None = None):
        self.sessions, self.definition, self.client, self.owned = sessions, definition, client, owned

    async def lost(self) -> bool:
        """The connection closed under this use: its persistent session is closed (the next
        use opens a new one, even if the SDK did not mark it closed, `connection_closed`).
        True when nothing of this use was sent: the session ended because a connection to
        the server could not be made, and no other use was under way (whose request that
        connection could have been)."""
        owned = self.owned
        if owned is None:
            return False
        alone = owned.in_flight == 1
        await self.sessions.forget(owned)
        return alone and could_not_connect(owned.failure)


class Sessions:
    """The worker's MCP sessions, by server name."""

    def __init__(self) -> None:
        self._open: dict[str, _Owned] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    @asynccontextmanager
    async def connected(self, definition: MCPServer) -> AsyncIterator[Lease]:
        """A connected client of `definition`'s server for one use: its persistent session
        (opened, or reopened after its server died, here), or a session of its own that
        closes after the use. Raises what opening a session raised."""
        if definition.session == "per_call":
            async with definition.client() as client:
                yield Lease(self, definition, client)
            return
        owned, client = await self._persistent(definition)
        owned.in_flight += 1
        try:
            yield Lease(self, definition, client, owned)
        finally:
            owned.in_flight -= 1

    async def _persistent(self, definition: MCPServer) -> tuple[_Owned, Any]:
        if self._closed:
            raise RuntimeError("the worker is stopping: its MCP sessions are closed")
        lock = self._locks.setdefault(definition.name, asyncio.Lock())
        async with lock:  # one opening at a time per server; an open session is shared
            owned = self._open.get(definition.name)
            if owned is not None and owned.ended():
                await self.forget(owned)
                owned = None
            if owned is None:
                owned = self._open[definition.name] = _Owned(definition)
            try:
                return owned, await owned.client()
            except BaseException:
                if owned.ready.done():  # a failed opening is not kept
                    await self.forget(owned)
                raise

    async def forget(self, owned: _Owned) -> None:
        """Close `owned`; the next use of its server opens a new session."""
        if self._open.get(owned.definition.name) is owned:
            del self._open[owned.definition.name]
        await owned.close()

    async def close(self) -> None:
        """Close every persistent session (the worker stops); later uses are refused."""
        self._closed = True
        owned, self._open = list(self._open.values()), {}
        await asyncio.gather(*(o.close() for o in owned))
