"""Connecting to Temporal as our clients and workers do (pydantic on the wire, the codec, tracing)."""

from __future__ import annotations

import os

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_teams.client import exit_guard
from durable_teams.encryption.codec import KeySetting, codec_for, with_codec

TASK_QUEUE = os.environ.get("TEMPORAL_TASK_QUEUE", "durable-teams")
NAMESPACE = os.environ.get("TEMPORAL_NAMESPACE", "default")


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
    return await Client.connect(
        address or default_address(),
        namespace=NAMESPACE,
        data_converter=with_codec(pydantic_data_converter, codec_for(encryption)),
        interceptors=interceptors,
    )


def encrypted(client: Client) -> bool:
    """Whether `client` encodes payloads with a codec (encryption): then nothing the user wrote
    goes into search attributes, which the server indexes in clear."""
    from durable_teams.encryption.codec import EncryptedPayloadGuard

    codec = client.data_converter.payload_codec
    return codec is not None and not isinstance(codec, EncryptedPayloadGuard)
