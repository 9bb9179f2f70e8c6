"""A worker-side payload converter that never fails to decode an argument the workflow
validates itself.

`TeamWorkflow`'s entry points declare no argument types to the SDK (workflows/inputs.py), so
their payloads are decoded without a type. A payload that cannot be decoded at all (metadata
saying `json/plain` over bytes that are not JSON, an unknown encoding: possible with
`temporal ... --input-meta` or hand-built payloads) would still fail in the SDK's decoder,
before any workflow code runs: a workflow's start input then fails its workflow task forever.
Here such a payload becomes an `Undecodable` value, and the workflow refuses it with a reason
like any other malformed input. Typed decodes (activity results, queries) are unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadConverter

from durable_teams.encryption.codec import EncryptedPayloadGuard
from durable_teams.workflows.inputs import Undecodable


def tolerant_client(client: Client) -> Client:
    """`client` with the same connection, codec and settings, decoding untyped arguments
    with `tolerant(...)` its payload converter. A client without a codec (one made with
    `Client.connect`, not our `connect()`) gets the encrypted-payload guard: an encrypted
    conversation then fails this worker's workflow tasks with the reason, until a worker with
    the key takes it, instead of being refused as malformed input and ended."""
    converter = client.data_converter
    tolerant_converter = dataclasses.replace(
        converter, payload_converter_class=tolerant(converter.payload_converter_class),
        payload_codec=converter.payload_codec or EncryptedPayloadGuard())
    config = client.config()
    config["data_converter"] = tolerant_converter
    return Client(**config)


def tolerant(base: type[PayloadConverter]) -> type[PayloadConverter]:
    """A subclass of `base` whose untyped decodes turn a failure into an `Undecodable`."""
    if getattr(base, "tolerant", False):
        return base

    class Tolerant(base):  # type: ignore[valid-type,misc]
        tolerant = True

        def from_payloads(self, payloads: Sequence[Payload], type_hints: list[type] | None = None) -> list[Any]:
            if type_hints:
                return super().from_payloads(payloads, type_hints)
            values: list[Any] = []
            for payload in payloads:
                try:
                    values.extend(super().from_payloads([payload]))
                except Exception as err:  # noqa: BLE001 - any decoding failure is the sender's
                    values.append(undecodable(payload, err))
            return values

    Tolerant.__name__ = Tolerant.__qualname__ = f"Tolerant{base.__name__}"
    return Tolerant


def undecodable(payload: Payload, err: Exception) -> Undecodable:
    cause = err.__cause__ if isinstance(err, RuntimeError) and err.__cause__ else err
    if isinstance(cause, ValidationError) and cause.errors():
        reason = cause.errors()[0]["msg"]
    else:
        reason = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
    encoding = payload.metadata.get("encoding", b"<none>").decode("utf-8", "replace")
    return Undecodable(encoding=encoding, reason=reason, preview=bytes(payload.data[:60]))
