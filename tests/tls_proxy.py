"""A TLS front for the test's Temporal dev server, as a cluster behind mTLS looks to its clients:
a private CA, a server certificate for 127.0.0.1, client certificates signed by the CA (or by
another CA, which the front refuses). Bytes go through unchanged once the handshake is done."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    """A client certificate from a CA the front does not trust."""
    stranger_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _issue(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
           signer: ec.EllipticCurvePrivateKey, *, ca: bool = False, ip: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _write(folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> tuple[Path, Path]:
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def make_pki(folder: Path) -> Pki:
    ca_key, other_ca_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _issue("test ca", ca_key, _name("test ca"), ca_key, ca=True)
    ca_cert, _ = _write(folder, "ca", ca, ca_key)
    keys = {n: ec.generate_private_key(ec.SECP256R1()) for n in ("server", "client", "stranger")}
    server = _write(folder, "server", _issue("127.0.0.1", keys["server"], ca.subject, ca_key, ip=True), keys["server"])
    client = _write(folder, "client", _issue("worker", keys["client"], ca.subject, ca_key), keys["client"])
    stranger = _write(folder, "stranger",
                      _issue("stranger", keys["stranger"], _name("other ca"), other_ca_key), keys["stranger"])
    return Pki(ca_cert, *server, *client, *stranger)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(ConnectionError, ssl.SSLError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with suppress(Exception):
        writer.close()


@asynccontextmanager
async def tls_front(target: str, pki: Pki) -> AsyncIterator[str]:
    """Serve mTLS on a free port of 127.0.0.1, relaying to `target` (host:port); yields the
    front's address."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    host, _, port = target.rpartition(":")
    relays: set[asyncio.Task[None]] = set()

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        both = asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))
        task = asyncio.ensure_future(both)
        relays.add(task)
        with suppress(asyncio.CancelledError):
            await task
        relays.discard(task)

    server = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=context)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for task in list(relays):
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)
