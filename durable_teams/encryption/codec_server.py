"""A codec server: the Temporal Web UI and `temporal --codec-endpoint` show decrypted payloads.

    durable-teams codec-server [--port 8081] [--host 127.0.0.1] [--origin http://localhost:8233]
    durable-teams server-start --codec-server   # the embedded Web UI pointed at one it starts

It implements Temporal's codec server protocol: `POST /encode` and `POST /decode` (also under a
namespace prefix, `/<namespace>/decode`) take and return `{"payloads": [...]}` in proto3 JSON,
with CORS for the Web UI's origin. It uses the keys of DURABLE_TEAMS_ENCRYPTION_KEY(_FILE), so
whoever can reach it can read every conversation: it listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from durable_teams.client.server_address import port_arg
from durable_teams.encryption.codec import EncryptionCodec, EncryptionKeyError, keys_from_env

ORIGINS_ENV = "DURABLE_TEAMS_CODEC_ORIGINS"
"""More Web UI origins to allow, comma-separated (a UI behind a proxy, another host)."""


def ui_origins(port: int) -> list[str]:
    """A Web UI on `port` of this machine, by both names of the loopback host."""
    return [f"http://localhost:{port}", f"http://127.0.0.1:{port}"]


def default_origins() -> list[str]:
    """The embedded server's Web UI on its configured port (DURABLE_TEAMS_UI_PORT, else the
    gRPC port + 1000), the compose file's UI (8080), and those in DURABLE_TEAMS_CODEC_ORIGINS."""
    from durable_teams.client.server_address import configured_port, configured_ui_port

    ports = dict.fromkeys([configured_ui_port(configured_port()), 8233, 8080])
    extra = [o.strip().rstrip("/") for o in os.environ.get(ORIGINS_ENV, "").split(",") if o.strip()]
    return [origin for port in ports for origin in ui_origins(port)] + extra
MAX_BODY = 64 * 1024 * 1024  # a history's payloads, not an unbounded upload


def transcode(codec: EncryptionCodec, action: str, body: bytes) -> bytes:
    """One request body through `codec` ("encode" or "decode"), as the protocol's JSON."""
    payloads = json_format.Parse(body, Payloads(), ignore_unknown_fields=True)
    convert = codec.encrypt if action == "encode" else codec.decrypt
    result = Payloads(payloads=[convert(p) for p in payloads.payloads])
    return json_format.MessageToJson(result, indent=None).encode()


def make_handler(codec: EncryptionCodec, origins: Sequence[str]) -> type[BaseHTTPRequestHandler]:
    allowed = set(origins)

    class CodecHandler(BaseHTTPRequestHandler):
        server_version = "durable-teams-codec"

        def _cors(self) -> None:
            origin = self.headers.get("Origin")
            if origin and ("*" in allowed or origin in allowed):
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Vary", "Origin")

        def _reply(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_OPTIONS(self) -> None:  # noqa: N802 - the browser's CORS preflight
            self.send_response(204)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers",
                             "Content-Type, X-Namespace, Authorization")
            self.send_header("Access-Control-Max-Age", "600")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            action = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if action not in ("encode", "decode"):
                return self._reply(404, b'{"message": "POST /encode or /decode"}')
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._reply(413, b'{"message": "request body too large"}')
            try:
                self._reply(200, transcode(codec, action, self.rfile.read(length)))
            except (json_format.ParseError, ValueError) as err:  # EncryptionKeyError included
                self._reply(400, json.dumps({"message": str(err)}).encode())

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # request lines carry no secrets, but payloads' paths are noise

    return CodecHandler


def serve(codec: EncryptionCodec, host: str = "127.0.0.1", port: int = 8081,
          origins: Sequence[str] | None = None) -> ThreadingHTTPServer:
    """A codec server bound to host:port (port 0 picks one), allowing `origins` (default:
    `default_origins()`); call `serve_forever()` on it."""
    return ThreadingHTTPServer((host, port), make_handler(codec, default_origins() if origins is None else origins))


def start_process(host: str, port: int, origins: Sequence[str], log_file: Path,
                  within: float = 30.0) -> subprocess.Popen[bytes]:
    """This codec server in a process of its own (its own session, so it outlives the caller
    when left running), once it accepts connections. Raises RuntimeError with the end of its
    log if it exits first (no key set, the port taken)."""
    from durable_teams.client.server_address import port_open

    command = [sys.executable, "-m", "durable_teams.encryption.codec_server", "--host", host, "--port", str(port)]
    for origin in origins:
        command += ["--origin", origin]
    with open(log_file, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + within
    while not port_open(host, port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            tail = log_file.read_text(errors="replace").strip().splitlines()[-1:] or ["(no log)"]
            raise RuntimeError(f"The codec server on {host}:{port} did not start: {tail[0]}")
        time.sleep(0.1)
    return process


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="durable-teams codec-server", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_arg, default=8081)
    p.add_argument("--origin", action="append", help="a Web UI origin allowed by CORS "
                   "(repeatable; default: the Web UI on DURABLE_TEAMS_UI_PORT, 8233 and 8080, and "
                   f"{ORIGINS_ENV}; '*' for any)")
    args = p.parse_args(argv)
    try:
        keys = keys_from_env()
        if not keys:
            raise EncryptionKeyError("no key: set DURABLE_TEAMS_ENCRYPTION_KEY or "
                                     "DURABLE_TEAMS_ENCRYPTION_KEY_FILE")
        server = serve(EncryptionCodec(keys), args.host, args.port, args.origin or None)
    except (EncryptionKeyError, OSError, ValueError) as err:
        sys.exit(f"durable-teams codec-server: {err}")
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"Codec server on http://{host}:{port} (keys: {', '.join(keys)}; "
          f"current: {next(iter(keys))}). Web UI: set it as the codec endpoint; "
          f"CLI: temporal workflow show --codec-endpoint http://{host}:{port} ...", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
