"""Encryption at rest: an AES-GCM payload codec, the way Temporal intends it.

Every payload (workflow input and result, activity arguments and results, signals, updates,
queries, memo, summaries) is encrypted by the client or worker before it reaches the server,
so the history holds ciphertext only. Failure messages move into encoded attributes so they
are encrypted too. Search attributes are not encoded (the server must index them); ours,
`AwaitingHuman`, is a bare flag.

Keys come from one setting, `DURABLE_TEAMS_ENCRYPTION_KEY` or `DURABLE_TEAMS_ENCRYPTION_KEY_FILE`:
a comma- or newline-separated list of `id:base64key` (16, 24 or 32 bytes; a key without `id:`
gets an id derived from its hash). The first key encrypts; every listed key decrypts, found by
the key id stored in each payload's metadata, so a key is rotated by putting the new one first
and keeping the old one until the conversations that used it are closed. Payloads that were
never encrypted still decode, so turning encryption on does not strand running conversations.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)

KEY_ENV = "DURABLE_TEAMS_ENCRYPTION_KEY"
KEY_FILE_ENV = "DURABLE_TEAMS_ENCRYPTION_KEY_FILE"
ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
NONCE_BYTES = 12
_KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")


class EncryptionKeyError(ValueError):
    """A key is missing, malformed, or not the one a payload was encrypted with."""


def _aesgcm(key: bytes) -> Any:  # AESGCM, from the optional dependency
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as err:  # pragma: no cover - depends on the installed extras
        raise EncryptionKeyError(
            "encryption needs the 'cryptography' package: pip install 'durable-teams[crypto]'"
        ) from err
    return AESGCM(key)


def parse_keys(text: str, source: str = KEY_ENV) -> dict[str, bytes]:
    """`id:base64key` entries (comma or newline separated, `#` comments) in order, first = current.
    Errors name the entry's position and `source`, never the key material."""
    keys: dict[str, bytes] = {}
    entries = [e.strip() for line in text.splitlines() for e in line.split("#", 1)[0].split(",")]
    for number, entry in enumerate((e for e in entries if e), start=1):
        key_id, sep, encoded = entry.rpartition(":")
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) not in (16, 24, 32):
            raise EncryptionKeyError(
                f"{source}: key {number} is not a base64 AES key of 16, 24 or 32 bytes "
                "(make one with: openssl rand -base64 32)")
        key_id = key_id if sep else hashlib.sha256(key).hexdigest()[:8]
        if not _KEY_ID_PATTERN.fullmatch(key_id):
            raise EncryptionKeyError(f"{source}: key id {key_id!r} must match [A-Za-z0-9._-]{{1,64}}")
        if key_id in keys:
            raise EncryptionKeyError(f"{source}: key id {key_id!r} is listed twice")
        keys[key_id] = key
    if not keys:
        raise EncryptionKeyError(f"{source} is set but holds no key")
    return keys


def keys_from_env(environ: Mapping[str, str] | None = None) -> dict[str, bytes] | None:
    """The keys `DURABLE_TEAMS_ENCRYPTION_KEY(_FILE)` configure, or None when neither is set."""
    environ = os.environ if environ is None else environ
    inline, path = environ.get(KEY_ENV, "").strip(), environ.get(KEY_FILE_ENV, "").strip()
    if inline and path:
        raise EncryptionKeyError(f"set {KEY_ENV} or {KEY_FILE_ENV}, not both")
    if path:
        try:
            return parse_keys(Path(path).read_text(), f"{KEY_FILE_ENV} ({path})")
        except OSError as err:
            raise EncryptionKeyError(f"{KEY_FILE_ENV}: cannot read {path}: {err.strerror}") from err
    return parse_keys(inline) if inline else None


class EncryptionCodec(PayloadCodec):
    """AES-GCM over each serialized payload; the key id rides in the payload's metadata (and is
    authenticated as associated data, so a payload cannot be passed off under another key)."""

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        if not keys:
            raise EncryptionKeyError("EncryptionCodec needs at least one key")
        self._ciphers = {key_id: _aesgcm(key) for key_id, key in keys.items()}
        self.current_key_id = next(iter(keys))

    def __repr__(self) -> str:  # never the key material
        return f"EncryptionCodec(current={self.current_key_id!r}, keys={list(self._ciphers)})"

    def encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        key_id = self.current_key_id.encode()
        sealed = self._ciphers[self.current_key_id].encrypt(
            nonce, payload.SerializeToString(), key_id)
        return Payload(metadata={"encoding": ENCODING, KEY_ID: key_id}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was turned on
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise EncryptionKeyError(
                f"payload encrypted with key id {key_id!r}, which is not among the configured "
                f"keys ({', '.join(self._ciphers)}); add it to {KEY_ENV} or {KEY_FILE_ENV}")
        try:
            plain = cipher.decrypt(payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:],
                                   key_id.encode())
        except Exception as err:  # cryptography's InvalidTag: wrong key under that id, or tampering
            raise EncryptionKeyError(
                f"payload under key id {key_id!r} does not decrypt: the key configured "
                "under that id is not the one it was encrypted with, or the payload was altered"
            ) from err
        return Payload.FromString(plain)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]


class EncryptedPayloadGuard(PayloadCodec):
    """Installed when no key is configured: leaves payloads as they are, and turns an encrypted
    one into a clear error instead of the converter's "unknown encoding". A codec rather than a
    payload converter so that, in a worker, the error is a workflow task failure (retried until
    a worker with the key takes over), never a conversation failed by its own input check. Its
    cost is nil: the SDK copies every payload sequence whether a codec is set or not."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        for payload in payloads:
            if payload.metadata.get("encoding") == ENCODING:
                key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
                raise EncryptionKeyError(
                    f"this conversation is encrypted (key id {key_id!r}) and no key is "
                    f"configured: set {KEY_ENV} or {KEY_FILE_ENV}")
        return list(payloads)


KeySetting = str | Mapping[str, bytes] | PayloadCodec | None


def codec_for(encryption: KeySetting = None) -> PayloadCodec:
    """The codec for a setting: a codec, keys (`{}`: none), a key string as in the environment
    variable, or None for whatever the environment configures (the guard when nothing)."""
    if isinstance(encryption, PayloadCodec):
        return encryption
    if isinstance(encryption, str):
        return EncryptionCodec(parse_keys(encryption, "encryption key"))
    keys = encryption if encryption is not None else keys_from_env()
    return EncryptionCodec(keys) if keys else EncryptedPayloadGuard()


def with_codec(converter: DataConverter, codec: PayloadCodec) -> DataConverter:
    """`converter` encoding payloads with `codec`; when it encrypts, failure messages and stack
    traces move into encoded attributes so they are encrypted as well."""
    if not isinstance(codec, EncryptionCodec):
        return dataclasses.replace(converter, payload_codec=codec)
    return dataclasses.replace(converter, payload_codec=codec,
                               failure_converter_class=DefaultFailureConverterWithEncodedAttributes)
