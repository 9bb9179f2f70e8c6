"""A throwaway PostgreSQL cluster on a free port in a temporary folder, for the memory store's
tests (Debian's `postgresql` package: initdb and pg_ctl). `.ci/run` installs it and sets
DURABLE_TEAMS_REQUIRE_POSTGRES=1, so in CI a missing server fails the tests instead of skipping
them."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable_teams.worker.devserver import free_port

from .conftest import system_program_missing


def pg_bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        system_program_missing(f"needs PostgreSQL's {name} (apt-get install postgresql)",
                               "DURABLE_TEAMS_REQUIRE_POSTGRES")
    return found


def _as_postgres_user() -> dict[str, object]:
    """PostgreSQL refuses to run as root: run it as the `postgres` (or `nobody`) user then."""
    if os.geteuid() != 0:
        return {}
    import pwd

    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return {"user": entry.pw_uid, "group": entry.pw_gid}
    pytest.fail("running as root and there is no postgres or nobody user to run PostgreSQL as")


@pytest.fixture(name="postgres_url", scope="module")
def postgres_url_fixture() -> Iterator[str]:
    """`postgresql://tester:secret@127.0.0.1:PORT/postgres` of a cluster that lives as long as
    the test module (password authentication, so the store's DSN carries a secret)."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    run_as = _as_postgres_user()
    with tempfile.TemporaryDirectory(prefix="dt-pg-") as tmp:
        folder = Path(tmp)
        data, socket_dir = folder / "data", folder / "sock"
        socket_dir.mkdir()
        pwfile = folder / "pw"
        pwfile.write_text("secret\n")
        if run_as:
            os.chmod(folder, 0o777)
            for p in (socket_dir, pwfile):
                os.chown(p, run_as["user"], run_as["group"])  # type: ignore[arg-type]
        subprocess.run([initdb, "-D", str(data), "-U", "tester", "--pwfile", str(pwfile), "-A",
                        "scram-sha-256", "--no-sync"], check=True, capture_output=True, **run_as)  # type: ignore[call-overload]
        port = free_port()
        options = f"-p {port} -k {socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w",
                        "-t", "60", "start"], check=True, capture_output=True, **run_as)  # type: ignore[call-overload]
        try:
            yield f"postgresql://tester:secret@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, **run_as)  # type: ignore[call-overload]
