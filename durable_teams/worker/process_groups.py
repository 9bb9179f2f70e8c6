"""The processes the embedded server leaves running (`start(detach=True)`): told apart from
whatever took their pid since, and stopped with their children as one process group."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def is_dev_server(pid: int) -> bool:
    """Guard against a stale pid file whose pid now belongs to some other program: is `pid`
    a `temporal server start-dev`?"""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not Path("/proc/self").exists():
        return True  # no /proc (macOS): trust the pid file
    try:
        return b"start-dev" in cmdline.read_bytes()
    except OSError:
        return False  # gone already


def is_codec_server(pid: int) -> bool:
    """Guard against a stale codec pid file: is `pid` our codec server?"""
    try:
        return b"durable_teams.encryption.codec_server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return not Path("/proc/self").exists()  # no /proc (macOS): trust the pid file


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group led by `pid` (started with start_new_session); ignore if gone."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
