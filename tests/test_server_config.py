"""A cluster set up by someone else: the address, namespace, TLS, mTLS and API key come from
Temporal's own environment configuration (variables and a profile file), as `temporal` reads
them; a setting that cannot work is one line naming it, and the API key is never printed."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from durable_teams.client import connection
from durable_teams.client.connection import TemporalRefused, TemporalUnreachable, connect
from durable_teams.client.server_config import ServerConfigError, load_server_config, split_address
from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import ROOT, cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .tls_proxy import make_pki, tls_front

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TEMPORAL_VARIABLES = ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
                      "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE")


def test_nothing_set_means_the_embedded_server_in_plaintext() -> None:
    config = load_server_config({"HOME": "/nonexistent"})
    assert (config.address, config.namespace, config.tls, config.api_key) == (None, "default", False, None)
    empty = load_server_config({"TEMPORAL_ADDRESS": "", "TEMPORAL_NAMESPACE": " ", "HOME": "/nonexistent"})
    assert (empty.address, empty.namespace) == (None, "default")


def test_an_api_key_turns_tls_on_and_is_never_shown() -> None:
    config = load_server_config({"TEMPORAL_ADDRESS": "acme.a1b2c.tmprl.cloud:7233",
                                 "TEMPORAL_NAMESPACE": "acme.a1b2c", "TEMPORAL_API_KEY": "sekrit-key"})
    assert config.connect_options() == {"namespace": "acme.a1b2c", "tls": True, "api_key": "sekrit-key"}
    assert config.security() == "TLS + API key"
    assert "sekrit" not in repr(config)
    plain = load_server_config({"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"})
    assert plain.connect_options()["tls"] is False


def test_client_certificates_make_mtls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    config = load_server_config({"TEMPORAL_ADDRESS": "127.0.0.1:7233",
                                 "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca_cert),
                                 "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client_cert),
                                 "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.client_key)})
    assert isinstance(config.tls, TLSConfig)
    assert config.tls.client_cert == pki.client_cert.read_bytes()
    assert config.tls.server_root_ca_cert == pki.ca_cert.read_bytes()
    assert config.security() == "mTLS"


def test_a_profile_file_names_the_server_and_variables_win(tmp_path: Path) -> None:
    file = tmp_path / "temporal.toml"
    file.write_text('[profile.default]\naddress = "prod.example:7233"\nnamespace = "prod"\n'
                    '[profile.staging]\naddress = "staging.example:7233"\napi_key = "k"\n')
    assert load_server_config({"TEMPORAL_CONFIG_FILE": str(file)}).address == "prod.example:7233"
    staging = load_server_config({"TEMPORAL_CONFIG_FILE": str(file), "TEMPORAL_PROFILE": "staging"})
    assert (staging.address, staging.namespace, staging.security()) == ("staging.example:7233", "default",
                                                                       "TLS + API key")
    mine = load_server_config({"TEMPORAL_CONFIG_FILE": str(file), "TEMPORAL_NAMESPACE": "mine"})
    assert (mine.address, mine.namespace) == ("prod.example:7233", "mine")


@pytest.mark.parametrize(("env", "message"), [
    ({"TEMPORAL_TLS": "maybe"}, "TEMPORAL_TLS='maybe': use true or false"),
    ({"TEMPORAL_TLS_CLIENT_CERT_PATH": "/no/such.pem"}, "TEMPORAL_TLS_CLIENT_CERT_PATH='/no/such.pem': no such file"),
    ({"TEMPORAL_CONFIG_FILE": "/no/such.toml"}, "TEMPORAL_CONFIG_FILE='/no/such.toml': no such file"),
    ({"TEMPORAL_PROFILE": "nope", "TEMPORAL_CONFIG_FILE": "{file}"}, "Temporal profile: Profile 'nope' not found"),
    ({"TEMPORAL_CONFIG_FILE": "{broken}"}, "Temporal profile: Configuration loading error: TOML parse error"),
    ({"TEMPORAL_ADDRESS": "temporal.internal"}, "Temporal address 'temporal.internal' needs a port"),
    ({"TEMPORAL_ADDRESS": "h:99999"}, "Temporal address 'h:99999': the port must be 1-65535"),
    ({"TEMPORAL_ADDRESS": "::1:7233"}, "Temporal address '::1:7233' needs a port"),
    ({"TEMPORAL_ADDRESS": "ftp://h:7233"}, "Temporal address 'ftp://h:7233': give host:port (no ftp://)"),
    ({"TEMPORAL_ADDRESS": "http://u:SECRET@h:7233"}, "the Temporal address holds credentials (user@host)"),
    ({"TEMPORAL_ADDRESS": "h:7233?token=SECRET"}, "the Temporal address holds a query string"),
    ({"TEMPORAL_ADDRESS": "https://h:7233/?api_key=SECRET&x=1"}, "the Temporal address holds a query string"),
    ({"TEMPORAL_ADDRESS": "127.0.0.1:¹⁷"}, "Temporal address '127.0.0.1:¹⁷': the port must be 1-65535"),
    ({"TEMPORAL_ADDRESS": "[127.0.0.1]:7233"}, "Temporal address '[127.0.0.1]:7233': brackets are for IPv6"),
    ({"TEMPORAL_TLS_CLIENT_CERT_PATH": "{file}"}, "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go"),
])
def test_a_setting_that_cannot_work_is_one_line_naming_it(tmp_path: Path, env: dict[str, str], message: str) -> None:
    (tmp_path / "ok.toml").write_text('[profile.default]\naddress = "h:7233"\n')
    (tmp_path / "broken.toml").write_text("[profile.default\n")
    env = {k: v.format(file=tmp_path / "ok.toml", broken=tmp_path / "broken.toml") for k, v in env.items()}
    with pytest.raises(ServerConfigError) as raised:
        load_server_config(env)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)
    assert "SECRET" not in str(raised.value)


@pytest.mark.parametrize(("address", "expected", "tls"), [
    ("[::1]:7233", ("::1", 7233), False), ("http://10.0.0.5:7233/", ("10.0.0.5", 7233), False),
    ("https://acme.tmprl.cloud:7233", ("acme.tmprl.cloud", 7233), True),
])
def test_addresses_in_the_forms_people_write_them(address: str, expected: tuple[str, int], tls: bool) -> None:
    config = load_server_config({"TEMPORAL_ADDRESS": address})
    assert config.address is not None and split_address(config.address) == expected
    assert config.tls is tls


async def test_a_conversation_runs_through_an_mtls_front(client: Client, task_queue: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker (`connect()`, as `durable-teams worker` does) and the CLI both reach the cluster
    through mTLS with certificates named in the environment; a client without a trusted
    certificate gets one line and exit 1."""
    pki = make_pki(tmp_path)
    tls = {"TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca_cert),
           "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client_cert), "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.client_key)}
    async with tls_front(client.service_client.config.target_host, pki) as front:
        for name in TEMPORAL_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in {"TEMPORAL_ADDRESS": front, **tls}.items():
            monkeypatch.setenv(name, value)
        secured = await connect()
        assert secured.service_client.config.target_host == front
        async with running_worker(secured, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
            env = cli_env(None, task_queue, TEMPORAL_ADDRESS=front, **tls)
            ran = await run_cli("run", "faang", faang.QUESTION, "--id", f"mtls-{uuid.uuid4().hex[:6]}", env=env)
            assert ran.code == 0 and "1,977,586" in ran.out, ran
            stranger = {**tls, "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.stranger_cert),
                        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.stranger_key)}
            refused = await run_cli("pending", env=cli_env(None, task_queue, TEMPORAL_ADDRESS=front, **stranger))
            assert one_line_failure(refused).startswith(f"durable-teams: no Temporal server at {front}: "), refused


async def test_the_api_key_reaches_the_server_with_every_call(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TEMPORAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    monkeypatch.setenv("TEMPORAL_API_KEY", "key-1")
    monkeypatch.setenv("TEMPORAL_TLS", "false")  # the dev server speaks plaintext and ignores the key
    keyed = await connect()
    assert keyed.api_key == "key-1"
    await keyed.workflow_service.get_system_info(GetSystemInfoRequest())


async def test_a_refused_client_is_told_to_check_its_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*args: object, **kwargs: object) -> Client:
        raise RPCError("Request unauthorized.", RPCStatusCode.UNAUTHENTICATED, b"")

    monkeypatch.setattr(connection.Client, "connect", refuse)
    monkeypatch.setenv("TEMPORAL_ADDRESS", "acme.tmprl.cloud:7233")
    monkeypatch.setenv("TEMPORAL_API_KEY", "wrong-key")
    with pytest.raises(TemporalRefused) as refused:
        await connect()
    assert str(refused.value) == ("the Temporal server at acme.tmprl.cloud:7233 refused this client: "
                                  "Request unauthorized. (check TEMPORAL_API_KEY or the TLS client certificate)")
    assert "wrong-key" not in str(refused.value)
    assert issubclass(TemporalRefused, RuntimeError) and not issubclass(TemporalRefused, TemporalUnreachable)


async def test_the_worker_says_how_it_reaches_a_configured_cluster(client: Client, task_queue: str,
                                                                   tmp_path: Path) -> None:
    """`durable-teams worker` through the mTLS front: it polls, and its start-up lines say the
    server, the namespace and how the connection is secured."""
    pki = make_pki(tmp_path)
    async with tls_front(client.service_client.config.target_host, pki) as front:
        env = cli_env(None, task_queue, TEMPORAL_ADDRESS=front,
                      TEMPORAL_TLS_SERVER_CA_CERT_PATH=str(pki.ca_cert),
                      TEMPORAL_TLS_CLIENT_CERT_PATH=str(pki.client_cert),
                      TEMPORAL_TLS_CLIENT_KEY_PATH=str(pki.client_key))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "durable_teams", "worker", cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            while not lines or not lines[-1].startswith("Worker: polling"):
                line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
                assert line, (lines, await proc.stderr.read() if proc.stderr else b"")
                lines.append(line.decode().rstrip("\n"))
        finally:
            proc.terminate()
            await proc.communicate()
    assert f"Temporal: {front}, namespace 'default' (mTLS)" in lines, lines
    assert lines[-1].startswith(f"Worker: polling task queue {task_queue!r}"), lines


async def test_the_gateway_refuses_a_namespace_that_does_not_exist(client: Client) -> None:
    """Before, it started, said healthy, and answered every call with a 404."""
    outcome = await run_cli("serve", "--port", "1", env=cli_env(client, TEMPORAL_NAMESPACE="nowhere-ns"))
    assert one_line_failure(outcome).startswith("durable-teams: namespace 'nowhere-ns' does not exist"), outcome
