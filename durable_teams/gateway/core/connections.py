"""How the gateway's HTTP server holds connections: uvicorn's h11 protocol with a deadline for
each request's headers.

uvicorn closes an idle keep-alive connection, but a client that sends a request's headers one
byte at a time holds its connection (and a slot of `--max-connections`) for as long as it
likes: every byte resets the idle timer. Here the whole header block of each request must
arrive within `header_timeout` seconds of the connection opening (or of the previous response
ending); otherwise the client gets a 408 and the connection is closed. The body has its own
deadline (the Guard's, see auth.py). A request h11 cannot parse (no `Host`, a bad chunk size,
a negative `Content-Length`) gets a 400 in JSON, like every other client error.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http import h11_impl
from uvicorn.protocols.http.h11_impl import H11Protocol

from durable_teams.gateway.core.exposure import SECURITY_HEADERS

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's headers (slow senders get a 408)."""

_TIMEOUT_BODY = json.dumps({"error": {"message": "the request's headers were not sent in time",
                                      "type": "request_timeout"}}).encode()
_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: " + str(len(_TIMEOUT_BODY)).encode()
                     + b"\r\n\r\n" + _TIMEOUT_BODY)


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers do not arrive in time."""

    header_timeout = DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._timed_cycle: object = None  # the request whose headers last arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._disarm_if_headers_arrived()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse, in JSON (uvicorn's is plain text)."""
        body = json.dumps({"error": {"message": f"malformed HTTP request: {msg}",
                                     "type": "invalid_request_error"}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close"), *SECURITY_HEADERS]
        if self.cycle is not None:  # a body that went wrong: the app's own answer goes nowhere
            self.cycle.disconnected = True
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._disarm_if_headers_arrived()  # a pipelined request may have started already
            if self.cycle is None or self.cycle.response_complete:
                self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _disarm_if_headers_arrived(self) -> None:
        # uvicorn makes a new cycle as soon as a request's headers are complete
        if self.cycle is not None and self.cycle is not self._timed_cycle:
            self._timed_cycle = self.cycle
            self._disarm()

    def _headers_too_late(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            # h11 cannot answer a request it has not parsed; the bytes are written as they are
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()


_BUSY_BODY = json.dumps({"error": {"message": "the gateway has --max-connections requests in progress; "
                                   "send again shortly", "type": "server_busy"}}).encode()


async def busy(scope: Any, receive: Any, send: Any) -> None:
    """The answer past `--max-connections`: a JSON 503 with Retry-After, like every other error
    (uvicorn's own is plain text)."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_BUSY_BODY)).encode()),
               (b"retry-after", b"1"), (b"connection", b"close"),
               *SECURITY_HEADERS]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": _BUSY_BODY, "more_body": False})


# uvicorn's h11 protocol names the app it runs past `limit_concurrency` at module level; ours
# answers there instead (this process serves the gateway only)
h11_impl.service_unavailable = busy


def server_config(app: Any, host: str, port: int, *, max_connections: int | None = 1000,
                  header_timeout: float = DEFAULT_HEADER_TIMEOUT, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration `durable-teams serve` runs the gateway with."""
    protocol = type("GatewayProtocol", (HeaderDeadlineProtocol,), {"header_timeout": header_timeout})
    return uvicorn.Config(app, host=host, port=port, http=protocol, limit_concurrency=max_connections,
                          timeout_keep_alive=5, server_header=False, **options)
