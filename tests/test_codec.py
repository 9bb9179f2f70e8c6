"""The AES-GCM payload codec and its key setting, without a server."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from durable_teams.encryption.codec import (
    ENCODING,
    KEY_ENV,
    KEY_FILE_ENV,
    KEY_ID,
    EncryptedPayloadGuard,
    EncryptionCodec,
    EncryptionKeyError,
    codec_for,
    keys_from_env,
    parse_keys,
)

pytestmark = pytest.mark.pure


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=f'"{text}"'.encode())


async def test_round_trip_hides_the_data_and_keeps_the_metadata_inside() -> None:
    codec = EncryptionCodec(parse_keys(f"k1:{new_key()}"))
    payload = plain("the customer's order 4711")
    (sealed,) = await codec.encode([payload])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID] == b"k1"
    assert b"4711" not in sealed.SerializeToString() and b"json/plain" not in sealed.data
    assert await codec.decode([sealed]) == [payload]
    (again,) = await codec.encode([payload])
    assert again.data != sealed.data  # a fresh nonce every time


async def test_rotation_new_key_encrypts_old_key_still_decrypts() -> None:
    old, new = new_key(), new_key()
    (sealed_old,) = await EncryptionCodec(parse_keys(f"old:{old}")).encode([plain("parked")])
    ring = EncryptionCodec(parse_keys(f"new:{new}, old:{old}"))
    (sealed_new,) = await ring.encode([plain("fresh")])
    assert sealed_new.metadata[KEY_ID] == b"new"
    assert await ring.decode([sealed_old, sealed_new]) == [plain("parked"), plain("fresh")]
    with pytest.raises(EncryptionKeyError, match=r"key id 'old', which is not among the configured keys \(new\)"):
        await EncryptionCodec(parse_keys(f"new:{new}")).decode([sealed_old])


async def test_wrong_key_under_the_right_id_or_tampering_is_a_clear_error() -> None:
    (sealed,) = await EncryptionCodec(parse_keys(f"k1:{new_key()}")).encode([plain("x")])
    with pytest.raises(EncryptionKeyError, match="does not decrypt"):
        await EncryptionCodec(parse_keys(f"k1:{new_key()}")).decode([sealed])
    (sealed,) = await (codec := EncryptionCodec(parse_keys(f"k1:{(key := new_key())}"))).encode([plain("x")])
    relabelled = Payload(metadata={"encoding": ENCODING, KEY_ID: b"k2"}, data=sealed.data)
    with pytest.raises(EncryptionKeyError, match="does not decrypt"):  # the id is authenticated
        await EncryptionCodec(parse_keys(f"k2:{key}")).decode([relabelled])
    assert await codec.decode([plain("never encrypted")]) == [plain("never encrypted")]


async def test_without_a_key_encrypted_payloads_say_so() -> None:
    (sealed,) = await EncryptionCodec(parse_keys(f"k9:{new_key()}")).encode([plain("x")])
    guard = EncryptedPayloadGuard()
    assert await guard.decode([plain("x")]) == [plain("x")]
    with pytest.raises(EncryptionKeyError, match=f"encrypted \\(key id 'k9'\\).*set {KEY_ENV}"):
        await guard.decode([sealed])


def test_key_setting_formats() -> None:
    key = new_key()
    keys = parse_keys(f"# rotated 2026-11\nb:{key}\na:{new_key()}, {new_key()}\n")
    assert list(keys)[:2] == ["b", "a"] and len(keys) == 3 and keys["b"] == base64.b64decode(key)
    assert parse_keys(key) == parse_keys(key)  # a bare key's id is derived from it, stably
    assert isinstance(codec_for(f"k:{key}"), EncryptionCodec)
    assert "k" in repr(codec_for(f"k:{key}")) and key not in repr(codec_for(f"k:{key}"))


@pytest.mark.parametrize("setting, message", [
    ("k1:bm90IGEga2V5", "key 1 is not a base64 AES key"),
    ("k1:%%%", "key 1 is not a base64 AES key"),
    ("bad id:" + base64.b64encode(b"k" * 32).decode(), "key id 'bad id' must match"),
    (f"a:{base64.b64encode(b'k' * 16).decode()},a:{base64.b64encode(b'j' * 16).decode()}", "listed twice"),
    (" , # nothing", "holds no key"),
])
def test_bad_key_settings_name_the_problem_not_the_key(setting: str, message: str) -> None:
    with pytest.raises(EncryptionKeyError, match=message) as caught:
        parse_keys(setting)
    material = setting.rpartition(":")[2]
    assert len(material) < 8 or material not in str(caught.value)


def test_environment_and_key_file(tmp_path: Path) -> None:
    assert keys_from_env({}) is None
    key_file = tmp_path / "keys"
    key_file.write_text(f"current:{new_key()}\nprevious:{new_key()}\n")
    assert list(keys_from_env({KEY_FILE_ENV: str(key_file)}) or {}) == ["current", "previous"]
    with pytest.raises(EncryptionKeyError, match="not both"):
        keys_from_env({KEY_ENV: f"a:{new_key()}", KEY_FILE_ENV: str(key_file)})
    with pytest.raises(EncryptionKeyError, match="cannot read .*missing"):
        keys_from_env({KEY_FILE_ENV: str(tmp_path / "missing")})
