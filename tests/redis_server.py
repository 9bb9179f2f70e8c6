"""A throwaway `redis-server` on a free port, for the live-delta broker tests.

The binary is the distribution's (`apt-get install redis-server`); `.ci/run` installs it and
sets DURABLE_TEAMS_REQUIRE_REDIS=1, so in CI a missing server fails the tests instead of
skipping them.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest

from durable_teams.worker.devserver import free_port

from .conftest import system_program_missing
from .waiting import until_sync


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        system_program_missing("needs redis-server (apt-get install redis-server)", "DURABLE_TEAMS_REQUIRE_REDIS")
    return found


@pytest.fixture(name="redis_url", scope="module")
def redis_url_fixture() -> Iterator[str]:
    """`redis://127.0.0.1:PORT/0` of a server that keeps nothing on disk."""
    port = free_port()
    proc = subprocess.Popen([redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        def listening() -> bool:
            assert proc.poll() is None, f"redis-server exited with {proc.returncode}"
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        until_sync(listening, f"redis-server listening on {port}", within=30, retry=(OSError,))
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
