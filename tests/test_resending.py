"""A call the connection dropped unsent (the server rotating the connection: a GOAWAY every
~5 minutes) is sent again; any other error, a CANCELLED the server sent included, is not, nor a
call whose caller is being cancelled (durable_teams/client/resending.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, DescribeNamespaceResponse
from temporalio.client import Client
from temporalio.service import ConnectConfig, RPCError, RPCStatusCode, ServiceClient

from durable_teams.client.resending import SENDS, UNSENT, ResendingServiceClient, resending

pytestmark = pytest.mark.pure

DROPPED = RPCError(UNSENT, RPCStatusCode.CANCELLED, b"")


class Transport(ServiceClient):
    """A stand-in connection: raises `errors` in turn, then answers (`cancel_caller`: the
    caller's task is cancelled as its call is dropped)."""

    def __init__(self, errors: list[RPCError], cancel_caller: bool = False) -> None:
        super().__init__(ConnectConfig(target_host="localhost:7233"))
        self.errors, self.cancel_caller, self.sent = errors, cancel_caller, 0

    @property
    def worker_service_client(self) -> Any:
        return self

    def update_rpc_metadata(self, metadata: Mapping[str, str | bytes]) -> None:
        pass

    def update_api_key(self, api_key: str | None) -> None:
        pass

    async def _rpc_call(self, rpc: str, req: Any, resp_type: Any, *, service: str, retry: bool,
                        metadata: Mapping[str, str | bytes], timeout: timedelta | None) -> Any:  # noqa: ASYNC109
        self.sent += 1
        if self.cancel_caller:
            asyncio.current_task().cancel()  # type: ignore[union-attr]
        if self.errors:
            raise self.errors.pop(0)
        return resp_type()


async def describe(transport: Transport) -> DescribeNamespaceResponse:
    return await ResendingServiceClient(transport).workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace="default"))


async def test_a_call_dropped_unsent_is_sent_again_until_it_is_answered() -> None:
    transport = Transport([DROPPED, DROPPED])
    assert await describe(transport) == DescribeNamespaceResponse()
    assert transport.sent == 3


async def test_a_call_dropped_unsent_every_time_fails_after_its_last_send() -> None:
    transport = Transport([DROPPED] * (SENDS + 1))
    with pytest.raises(RPCError, match=UNSENT):
        await describe(transport)
    assert transport.sent == SENDS


@pytest.mark.parametrize("error", [RPCError("context canceled", RPCStatusCode.CANCELLED, b""),
                                   RPCError(UNSENT, RPCStatusCode.UNAVAILABLE, b""),
                                   RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")])
async def test_any_other_error_is_the_callers_at_once(error: RPCError) -> None:
    transport = Transport([error])
    with pytest.raises(RPCError) as raised:
        await describe(transport)
    assert raised.value is error and transport.sent == 1


async def test_a_call_dropped_while_its_caller_is_being_cancelled_is_not_sent_again() -> None:
    transport = Transport([DROPPED], cancel_caller=True)
    with pytest.raises(RPCError, match=UNSENT):
        await asyncio.ensure_future(describe(transport))
    assert transport.sent == 1


def test_a_client_made_resending_keeps_its_namespace_and_converter_and_is_made_so_once() -> None:
    plain = Client(Transport([]), namespace="shop")
    made = resending(plain)
    assert isinstance(made.service_client, ResendingServiceClient) and made.namespace == "shop"
    assert made.data_converter is plain.data_converter and resending(made) is made
    assert made.service_client.worker_service_client is plain.service_client
