"""The gateway on a network: HTTPS with `--tls-cert`/`--tls-key` (bearer tokens never travel in
clear), one line when the TLS settings cannot work, and a warning when tokens would be served
over plain HTTP to other machines."""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from temporalio.client import Client

from durable_teams.cli.serve import check_tls, clear_tokens_warning
from durable_teams.client.server_address import port_open
from durable_teams.gateway.core.auth import TOKENS_ENV

from .cli_process import ROOT, cli_env, run_cli
from .tls_proxy import make_pki
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_gateway_serves_https_with_a_certificate(client: Client, tmp_path: Path) -> None:
    pki, port = make_pki(tmp_path), free_port()
    env = cli_env(client, **{TOKENS_ENV: "tok1"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", "serve", "--port", str(port),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key), "--header-timeout", "1",
        cwd=ROOT, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        async def listening() -> bool:  # or died
            return port_open("127.0.0.1", port) or proc.returncode is not None
        await until(listening, f"the gateway listening on {port}")
        assert proc.returncode is None, await proc.stderr.read() if proc.stderr else b""
        async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{port}", verify=ssl.create_default_context(cafile=str(pki.ca_cert))) as https:
            health = await https.get("/healthz")
            listed = await https.get("/questions", headers={"Authorization": "Bearer tok1"})
            refused = await https.get("/questions")
        assert (health.status_code, health.json()) == (200, {"ok": True})
        assert listed.status_code == 200 and isinstance(listed.json(), list)
        assert refused.status_code == 401
        # a connection that never starts its handshake is closed at the header deadline, not
        # asyncio's 60 s (it does not count against --max-connections until the handshake ends)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as plain:
            with pytest.raises(httpx.HTTPError):  # no plaintext answer on the TLS port
                await plain.get("/healthz", headers={"Authorization": "Bearer tok1"})
    finally:
        proc.terminate()
        await proc.wait()


def test_tls_settings_that_cannot_work_are_one_line(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    assert check_tls(None, None) is None and check_tls(str(pki.server_cert), str(pki.server_key)) is None
    assert check_tls(str(pki.server_cert), None) == ("--tls-cert and --tls-key go together (a certificate "
                                                     "and its private key)")
    assert check_tls("/no/cert.pem", str(pki.server_key)) == "--tls-cert '/no/cert.pem': no such file"
    mismatch = check_tls(str(pki.server_cert), str(pki.stranger_key))
    assert mismatch is not None and "the key does not match the certificate" in mismatch
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    assert "not a PEM certificate and key" in (check_tls(str(garbage), str(pki.server_key)) or "")
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    locked = tmp_path / "locked.key"
    locked.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(b"secret")))
    assert check_tls(str(pki.server_cert), str(locked)) == (
        f"--tls-key {str(locked)!r} is protected by a pass phrase: give the key unencrypted (readable only "
        "by the gateway)")


async def test_a_refused_tls_setting_stops_the_gateway_before_it_starts(tmp_path: Path) -> None:
    outcome = await run_cli("serve", "--tls-key", str(tmp_path / "key.pem"), env=cli_env(None))
    assert (outcome.code, outcome.err.strip()) == (
        2, "durable-teams: --tls-cert and --tls-key go together (a certificate and its private key)")


def test_tokens_over_plain_http_to_a_network_are_warned_of() -> None:
    assert clear_tokens_warning("0.0.0.0", ["tok"], None) == (
        "warning: serving on 0.0.0.0 over plain HTTP: bearer tokens travel in clear; give "
        "--tls-cert/--tls-key, or serve behind a proxy that terminates TLS")
    assert clear_tokens_warning("0.0.0.0", ["tok"], "cert.pem") is None
    assert clear_tokens_warning("127.0.0.1", ["tok"], None) is None
