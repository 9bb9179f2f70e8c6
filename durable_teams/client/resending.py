"""Calls the connection dropped before sending them, sent again.

A Temporal frontend closes each client connection after `frontend.keepAliveMaxConnectionAge`
(5 minutes by default, jittered) with an HTTP/2 GOAWAY. The client reconnects, but a call that
was queued on the closing connection at that moment is dropped unsent: the SDK's transport
(hyper) reports it as an `RPCError` CANCELLED "operation was canceled", and the SDK does not
send it again (CANCELLED is not among its retried codes). Under load the race is common enough
to fail a request every few minutes: a gateway answered it with a 503.

The server never saw such a call, so sending it again is safe, a write included. Only that
error is sent again: a CANCELLED the server sent has another message ("context canceled"), and
a caller that is itself being cancelled is never kept waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta

import google.protobuf.message
from temporalio.client import Client
from temporalio.service import (
    RPCError,
    RPCStatusCode,
    ServiceClient,
    ServiceResponse,
    _BridgeServiceClient,  # what workers poll through (the SDK's type)
)

UNSENT = "operation was canceled"
"""The transport's message for a call it dropped before sending it (hyper's `Canceled`)."""

SENDS = 3
"""Times a call is sent at most while the transport drops it unsent."""


def unsent(err: Exception) -> bool:
    """Whether `err` is the transport dropping a call before sending it (not the server's
    answer)."""
    return isinstance(err, RPCError) and err.status == RPCStatusCode.CANCELLED and err.message == UNSENT


class ResendingServiceClient(ServiceClient):
    """`inner`, with each call the transport dropped unsent sent again (up to `SENDS` times).
    Workers poll through `inner` itself (`worker_service_client`)."""

    def __init__(self, inner: ServiceClient) -> None:
        super().__init__(inner.config)
        self.inner = inner

    @property
    def worker_service_client(self) -> _BridgeServiceClient:
        return self.inner.worker_service_client

    def update_rpc_metadata(self, metadata: Mapping[str, str | bytes]) -> None:
        self.inner.update_rpc_metadata(metadata)

    def update_api_key(self, api_key: str | None) -> None:
        self.inner.update_api_key(api_key)

    async def _rpc_call(self, rpc: str, req: google.protobuf.message.Message, resp_type: type[ServiceResponse],
                        *, service: str, retry: bool, metadata: Mapping[str, str | bytes],
                        timeout: timedelta | None) -> ServiceResponse:  # noqa: ASYNC109 - the SDK's signature
        for sent in range(1, SENDS + 1):
            try:
                return await self.inner._rpc_call(rpc, req, resp_type, service=service, retry=retry,
                                                  metadata=metadata, timeout=timeout)
            except RPCError as err:
                if not unsent(err) or sent == SENDS or _cancelling():
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def resending(client: Client) -> Client:
    """`client`, with its calls that the connection dropped unsent sent again (the same
    namespace, converter and interceptors; one connection shared with `client`)."""
    if isinstance(client.service_client, ResendingServiceClient):
        return client
    config = client.config()
    config["service_client"] = ResendingServiceClient(client.service_client)
    return Client(**config)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
