"""Connecting to Temporal as our clients and workers do (pydantic on the wire, the codec, tracing)."""

from __future__ import annotations

import os

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import exit_guard
from durable_teams.encryption.codec import KeySetting, codec_for, with_codec

TASK_QUEUE = os.environ.get("TEMPORAL_TASK_QUEUE", "durable-teams")
NAMESPACE = os.environ.get("TEMPORAL_NAMESPACE", "default")


class TemporalUnreachable(RuntimeError):
    """No Temporal server could be reached at the address (the SDK's reason, in one line)."""


class NamespaceNotFound(RuntimeError):
    """The namespace a worker was given does not exist on its server."""


async def require_namespace(client: Client) -> None:
    """Raise `NamespaceNotFound` (one line saying what to do) when `client`'s namespace does not
    exist. The SDK would fail a worker's start with a long core error, which `async with` turns
    into a bare cancellation. Any other answer, a refusal included, lets the worker try."""
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=client.namespace))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NamespaceNotFound(
                f"namespace {client.namespace!r} does not exist on the Temporal server at "
                f"{client.service_client.config.target_host} (create it: temporal operator namespace "
                f"create --namespace {client.namespace}; or set TEMPORAL_NAMESPACE)") from None


def default_address() -> str:
    """`$TEMPORAL_ADDRESS`, else the embedded server's (127.0.0.1, `$DURABLE_TEAMS_PORT` or 7233)."""
    from durable_teams.client.server_address import DEFAULT_HOST, configured_port

    return os.environ.get("TEMPORAL_ADDRESS") or f"{DEFAULT_HOST}:{configured_port()}"


async def connect(address: str | None = None, *, encryption: KeySetting = None,
                  tracing: bool | None = None) -> Client:
    """A client using pydantic on the wire (our message types are pydantic models). Payloads
    are encrypted when `encryption` (keys as in DURABLE_TEAMS_ENCRYPTION_KEY, or an
    `EncryptionCodec`) or the environment configures a key; see durable_teams/encryption/codec.py.
    `tracing=True` (default: $DURABLE_TEAMS_OTEL set to 1) adds OpenTelemetry tracing
    (durable_teams/tracing/interceptors.py, the `otel` extra). A worker built on this client encodes with
    the same codec and traces the same way.

    A server that cannot be reached raises `TemporalUnreachable`, whose message is one line.

    Also makes the interpreter's exit wait for the SDK's native threads to leave Python, so a
    script ending with a plain `asyncio.run(...)` does not abort at exit (durable_teams/client/exit_guard.py).
    """
    exit_guard.install()
    if tracing is None:
        tracing = os.environ.get("DURABLE_TEAMS_OTEL", "").lower() in ("1", "true", "yes")
    interceptors = []
    if tracing:
        from durable_teams.tracing.interceptors import tracing_interceptors

        interceptors = tracing_interceptors()
    address = address or default_address()
    try:
        return await Client.connect(
            address,
            namespace=NAMESPACE,
            data_converter=with_codec(pydantic_data_converter, codec_for(encryption)),
            interceptors=interceptors,
        )
    except RuntimeError as err:  # the SDK's "Failed client connect: ..." (a Rust error's text)
        raise TemporalUnreachable(f"no Temporal server at {address}: {str(err).splitlines()[0]}") from err


def encrypted(client: Client) -> bool:
    """Whether `client` encodes payloads with a codec (encryption): then nothing the user wrote
    goes into search attributes, which the server indexes in clear."""
    from durable_teams.encryption.codec import EncryptedPayloadGuard

    codec = client.data_converter.payload_codec
    return codec is not None and not isinstance(codec, EncryptedPayloadGuard)
