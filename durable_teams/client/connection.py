"""Connecting to Temporal as our clients and workers do (pydantic on the wire, the codec, tracing)."""

from __future__ import annotations

import os

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import exit_guard
from durable_teams.client.resending import resending
from durable_teams.client.server_config import ServerConfig, load_server_config
from durable_teams.encryption.codec import KeySetting, codec_for, with_codec

TASK_QUEUE = os.environ.get("TEMPORAL_TASK_QUEUE", "").strip() or "durable-teams"


class TemporalUnreachable(RuntimeError):
    """No Temporal server could be reached at the address (the SDK's reason, in one line)."""


class TemporalRefused(RuntimeError):
    """The server answered but refused this client (a missing or wrong API key or certificate)."""


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


def configured_address() -> str | None:
    """The server named by `$TEMPORAL_ADDRESS` or the Temporal profile (server_config.py); None
    when nothing names one (the embedded server is meant)."""
    return load_server_config().address


def default_address() -> str:
    """The configured server's address, else the embedded server's (127.0.0.1,
    `$DURABLE_TEAMS_PORT` or 7233)."""
    from durable_teams.client.server_address import DEFAULT_HOST, configured_port

    return configured_address() or f"{DEFAULT_HOST}:{configured_port()}"


async def connect(address: str | None = None, *, encryption: KeySetting = None,
                  tracing: bool | None = None) -> Client:
    """A client using pydantic on the wire (our message types are pydantic models). Payloads
    are encrypted when `encryption` (keys as in DURABLE_TEAMS_ENCRYPTION_KEY, or an
    `EncryptionCodec`) or the environment configures a key; see durable_teams/encryption/codec.py.
    `tracing=True` (default: $DURABLE_TEAMS_OTEL set to 1) adds OpenTelemetry tracing
    (durable_teams/tracing/interceptors.py, the `otel` extra). A worker built on this client encodes with
    the same codec and traces the same way.

    Namespace, TLS, API key and gRPC headers come from Temporal's environment configuration
    (durable_teams/client/server_config.py); TLS and the API key apply to the configured server,
    not to the embedded one. A setting that cannot work raises `ServerConfigError`, a server that
    cannot be reached `TemporalUnreachable`; both messages are one line.

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
    config = load_server_config()
    if config.address is None:  # the embedded server: plain, whatever else is set
        config = ServerConfig(namespace=config.namespace)
    address = address or config.address or default_address()
    try:
        client = await Client.connect(
            address,
            data_converter=with_codec(pydantic_data_converter, codec_for(encryption)),
            interceptors=interceptors,
            **config.connect_options(),
        )
    except RPCError as err:  # the server's own answer to the first call
        if err.status in (RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.PERMISSION_DENIED):
            raise TemporalRefused(f"the Temporal server at {address} refused this client: {err.message} "
                                  "(check TEMPORAL_API_KEY or the TLS client certificate)") from None
        raise TemporalUnreachable(f"Temporal server at {address}: {err.message}") from None
    except RuntimeError as err:  # the SDK's "Failed client connect: ..." (a Rust error's text)
        how = config.security()
        hint = "" if how == "plaintext" else f" (this client connects with {how})"
        raise TemporalUnreachable(f"no Temporal server at {address}: {str(err).splitlines()[0]}{hint}") from err
    return resending(client)  # a call the connection dropped unsent (its rotation) is sent again


def encrypted(client: Client) -> bool:
    """Whether `client` encodes payloads with a codec (encryption): then nothing the user wrote
    goes into search attributes, which the server indexes in clear."""
    from durable_teams.encryption.codec import EncryptedPayloadGuard

    codec = client.data_converter.payload_codec
    return codec is not None and not isinstance(codec, EncryptedPayloadGuard)
