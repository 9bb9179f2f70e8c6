"""Keeping secrets: the payload codec, its server for the Web UI, redaction of logs.

`EncryptionCodec` encrypts payloads at rest (docs/deployment.md); `EncryptionKeyError` is what
a missing or malformed key raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "EncryptionCodec": "durable_teams.encryption.codec",
    "EncryptionKeyError": "durable_teams.encryption.codec",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.encryption.codec import EncryptionCodec, EncryptionKeyError
