"""Which Temporal server to use and how to reach it, read the way Temporal's own tools read it.

A cluster set up by someone else is described by Temporal's environment configuration: the
variables `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`,
`TEMPORAL_TLS_CLIENT_CERT_PATH` / `_KEY_PATH`, `TEMPORAL_TLS_SERVER_CA_CERT_PATH`,
`TEMPORAL_TLS_SERVER_NAME`, `TEMPORAL_GRPC_META_<NAME>`, and a profile in a TOML file
(`TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`; `TEMPORAL_PROFILE`, else
`default`), the variables winning over the file. The `temporal` CLI and every SDK read the same
settings (`temporalio.envconfig`), so what works for `temporal workflow list` works here: Temporal
Cloud with an API key or mTLS, a self-hosted cluster behind TLS, a plain local server.

No address anywhere means the embedded dev server (durable_teams/worker/devserver.py). Empty
variables count as unset. A setting that cannot work (a certificate file that is not there, a
profile that does not exist, an address without a port) raises `ServerConfigError` with one line
saying which setting and why, before anything connects. The API key is never printed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio.envconfig import ClientConfigProfile
from temporalio.service import TLSConfig

DEFAULT_NAMESPACE = "default"
_TLS_WORDS = {"true": True, "1": True, "false": False, "0": False}


class ServerConfigError(ValueError):
    """A Temporal connection setting that cannot work; the message names it (never a secret)."""


@dataclass(frozen=True)
class ServerConfig:
    """Where and how to connect. `address` is None when nothing names a server (use the
    embedded one). `tls` is False, True (the system's roots), or a `TLSConfig` (own CA, mTLS)."""

    address: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    api_key: str | None = field(default=None, repr=False)
    tls: bool | TLSConfig = False
    rpc_metadata: Mapping[str, str] = field(default_factory=dict, repr=False)

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments for `Client.connect`, besides the address."""
        options: dict[str, Any] = {"namespace": self.namespace, "tls": self.tls}
        if self.api_key:
            options["api_key"] = self.api_key
        if self.rpc_metadata:
            options["rpc_metadata"] = dict(self.rpc_metadata)
        return options

    def security(self) -> str:
        """How the connection is secured, for a start-up line: no secret in it."""
        parts = []
        if isinstance(self.tls, TLSConfig):
            parts.append("mTLS" if self.tls.client_cert else "TLS")
        elif self.tls:
            parts.append("TLS")
        if self.api_key:
            parts.append("API key")
        return " + ".join(parts) or "plaintext"


def split_address(address: str) -> tuple[str, int]:
    """`host:port` (a name, IPv4, or `[IPv6]`) as host and port; raises `ServerConfigError`."""
    host, sep, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if ":" not in host:
            raise ServerConfigError(f"Temporal address {address!r}: brackets are for IPv6 addresses "
                                    f"([::1]:7233); give {host}:{port}")
    if not sep or not host or ":" in host and not address.startswith("["):
        raise ServerConfigError(f"Temporal address {address!r} needs a port: host:port, e.g. "
                                f"{(host if sep else address) or 'localhost'}:7233 ([::1]:7233 for IPv6)")
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ServerConfigError(f"Temporal address {address!r}: the port must be 1-65535")
    return host, int(port)


def _address(raw: str) -> tuple[str, bool]:
    """The address without a URL's scheme (which the SDK no longer takes), and whether the scheme
    asked for TLS (`https://`)."""
    text = raw.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if "?" in text or "#" in text:  # ?token=...: never echoed (it may be a secret)
        raise ServerConfigError("the Temporal address holds a query string (?...): give host:port, "
                                "and a key as TEMPORAL_API_KEY")
    if "@" in (rest if sep else text):  # user:password@host: never echoed (it may be a secret)
        raise ServerConfigError("the Temporal address holds credentials (user@host): give host:port, "
                                "and the key as TEMPORAL_API_KEY")
    if sep and scheme.lower() not in ("http", "https", "grpc", "grpcs"):
        raise ServerConfigError(f"Temporal address {raw!r}: give host:port (no {scheme}://)")
    address = rest if sep else text
    split_address(address)
    return address, sep != "" and scheme.lower() in ("https", "grpcs")


def _checked_env(env: Mapping[str, str]) -> dict[str, str]:
    """Temporal's variables with empty ones dropped, after checking what envconfig lets pass."""
    settings = {k: v for k, v in env.items() if k.startswith("TEMPORAL_") and v.strip()}
    tls = settings.get("TEMPORAL_TLS")
    if tls is not None and tls.strip().lower() not in _TLS_WORDS:
        raise ServerConfigError(f"TEMPORAL_TLS={tls!r}: use true or false")
    config_file = settings.get("TEMPORAL_CONFIG_FILE")
    if config_file is not None and not os.path.isfile(config_file):
        raise ServerConfigError(f"TEMPORAL_CONFIG_FILE={config_file!r}: no such file")
    for name, value in settings.items():
        if name.startswith("TEMPORAL_TLS_") and name.endswith("_PATH") and not os.path.isfile(value):
            raise ServerConfigError(f"{name}={value!r}: no such file")
    cert, key = (any(n.startswith(f"TEMPORAL_TLS_CLIENT_{part}_") for n in settings) for part in ("CERT", "KEY"))
    if cert != key:
        raise ServerConfigError("TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together "
                                "(mTLS: this client's certificate and its key)")
    return settings


def load_server_config(env: Mapping[str, str] | None = None) -> ServerConfig:
    """The connection settings from `env` (default: this process's environment) and the
    Temporal profile it points to; raises `ServerConfigError` for one that cannot work."""
    settings = _checked_env(os.environ if env is None else env)
    try:
        profile = ClientConfigProfile.load(override_env_vars=settings)
        options = profile.to_client_connect_config()
    except OSError as err:  # a path named in the profile file
        raise ServerConfigError(f"Temporal profile: {err.strerror}: {err.filename}") from None
    except Exception as err:  # envconfig's ConfigError: a bad TOML file, an unknown profile
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ServerConfigError(f"Temporal profile: {first}") from None
    address, https = (None, False)
    if options.get("target_host"):
        address, https = _address(options["target_host"])
    tls: bool | TLSConfig = options.get("tls", False)
    if https and tls is False and "TEMPORAL_TLS" not in settings:
        tls = True
    return ServerConfig(address=address, namespace=options.get("namespace") or DEFAULT_NAMESPACE,
                        api_key=options.get("api_key"), tls=tls,
                        rpc_metadata=dict(options.get("rpc_metadata") or {}))
