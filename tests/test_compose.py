"""docker-compose.yml cannot run here (no Docker engine), so its wiring is checked by parsing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, Any] = COMPOSE["services"]

POSTGRES = "postgresql"
TEMPORAL = "temporal"
REGISTRAR = "temporal-create-search-attributes"
UI = "temporal-ui"
WORKER = "worker"


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
    """Container port -> host port for each `HOST:CONTAINER` entry of `ports`."""
    mapping = {}
    for entry in SERVICES[service].get("ports", []):
        *host, container = str(entry).split(":")
        mapping[int(container)] = int(host[-1]) if host else int(container)
    return mapping


def temporal_target() -> str:
    """`<temporal service name>:<its gRPC container port>`, as other containers must dial it."""
    grpc = [port for port in published(TEMPORAL) if port == 7233]
    assert grpc, "temporal does not publish its gRPC port 7233"
    return f"{TEMPORAL}:{grpc[0]}"


def test_all_services_exist() -> None:
    assert {POSTGRES, TEMPORAL, REGISTRAR, UI, WORKER} <= set(SERVICES)


def test_temporal_runs_on_postgres() -> None:
    assert SERVICES[POSTGRES]["image"].startswith("postgres:")
    assert SERVICES[TEMPORAL]["image"].startswith("temporalio/auto-setup")
    temporal, postgres = env(TEMPORAL), env(POSTGRES)
    assert temporal["DB"] in {"postgres12", "postgres12_pgx"}
    assert temporal["DB_PORT"] == "5432"
    assert temporal["POSTGRES_SEEDS"] == POSTGRES  # the postgres service's DNS name
    assert temporal["POSTGRES_USER"] == postgres["POSTGRES_USER"]
    assert temporal["POSTGRES_PWD"] == postgres["POSTGRES_PASSWORD"]
    assert POSTGRES in depends_on(TEMPORAL)


def test_ports_are_published() -> None:
    assert published(TEMPORAL).get(7233) == 7233
    assert published(UI).get(8080) == 8080


def test_ui_and_worker_dial_the_temporal_service() -> None:
    target = temporal_target()
    assert target == "temporal:7233"
    assert env(UI)["TEMPORAL_ADDRESS"] == target
    assert env(WORKER)["TEMPORAL_ADDRESS"] == target
    assert env(REGISTRAR)["TEMPORAL_ADDRESS"] == target
    assert TEMPORAL in depends_on(UI)


def test_worker_is_built_from_this_project() -> None:
    worker = SERVICES[WORKER]
    assert worker["build"] == "."
    command = worker["command"]
    assert (command if isinstance(command, str) else " ".join(command)) == "python worker.py"
    assert env(WORKER)["TEMPORAL_TASK_QUEUE"] == "durable-teams"
    assert (ROOT / "worker.py").is_file()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.MULTILINE)
    assert re.search(r"^RUN pip install .*\.\s*$", dockerfile, re.MULTILINE)
    assert re.search(r'^CMD \["python", "worker.py"\]\s*$', dockerfile, re.MULTILINE)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "**/__pycache__", "*.db"} <= set(ignored)


def test_search_attribute_is_registered_before_the_worker_starts() -> None:
    registrar = SERVICES[REGISTRAR]
    assert registrar["image"].startswith("temporalio/admin-tools")
    script = " ".join(registrar["command"]) if isinstance(registrar["command"], list) \
        else registrar["command"]
    create = re.search(r"temporal operator search-attribute create ([^;&|]*)", script)
    assert create, "no `temporal operator search-attribute create` in the registrar"
    args = create.group(1)
    assert "--name AwaitingHuman" in args and "--type Bool" in args
    assert f"--address {temporal_target()}" in args
    assert "seq" in script and "sleep" in script  # retries until the server is up
    assert TEMPORAL in depends_on(REGISTRAR)
    assert depends_on(WORKER)[REGISTRAR] == "service_completed_successfully"
    assert TEMPORAL in depends_on(WORKER)


def test_secrets_come_from_the_shell_not_the_file() -> None:
    worker = env(WORKER)
    assert re.fullmatch(r"\$\{OPENAI_API_KEY(:?-)?\}", worker["OPENAI_API_KEY"])  # empty default
    assert re.fullmatch(r"\$\{OPENAI_BASE_URL(:?-[^}]*)?\}", worker["OPENAI_BASE_URL"])
    assert not re.search(r"sk-[A-Za-z0-9]{8,}", COMPOSE_TEXT)
    assert "OPENAI_API_KEY" not in (ROOT / "Dockerfile").read_text()
