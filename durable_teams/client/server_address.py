"""Where the Temporal server is: the embedded dev server's host and ports, from the environment."""

from __future__ import annotations

import argparse
import os
import socket

DEFAULT_PORT = 7233
DEFAULT_HOST = "127.0.0.1"


def configured_port() -> int:
    """The embedded server's gRPC port: `$DURABLE_TEAMS_PORT`, else 7233."""
    return _port_setting("DURABLE_TEAMS_PORT", DEFAULT_PORT)


def configured_ui_port(port: int) -> int:
    """The Web UI's port: `$DURABLE_TEAMS_UI_PORT`, else the gRPC port + 1000."""
    return _port_setting("DURABLE_TEAMS_UI_PORT", port + 1000)


def configured_codec_port() -> int | None:
    """`$DURABLE_TEAMS_CODEC_PORT`: the Web UI decodes payloads through a codec server on this
    port, started with the dev server (`server-start --codec-server`); None when unset."""
    return _port_setting("DURABLE_TEAMS_CODEC_PORT", 0) or None


def _port_setting(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ValueError(f"{name}={value!r} is not a port number (1-65535)")
    return int(value)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True if `host:port` accepts a TCP connection right now (a name, IPv4 or IPv6)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except (OSError, OverflowError, ValueError):  # refused, unreachable, unknown name, bad port
        return False


def port_arg(text: str) -> int:
    """An argparse type: a TCP port, 1-65535 (a larger number failed deep in the socket layer
    with OverflowError)."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port
