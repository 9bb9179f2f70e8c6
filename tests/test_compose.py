"""docker-compose.yml cannot run here (no Docker engine), so its wiring is checked by parsing."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def env(service: str) -> dict[str, str]:
    return {k: str(v) for k, v in SERVICES[service]["environment"].items()}


def test_temporal_runs_on_postgres() -> None:
    temporal = env("temporal")
    assert temporal["DB"].startswith("postgres")
    assert temporal["POSTGRES_SEEDS"] == "postgresql"
    assert temporal["POSTGRES_USER"] == env("postgresql")["POSTGRES_USER"]
    assert temporal["POSTGRES_PWD"] == env("postgresql")["POSTGRES_PASSWORD"]
    assert "postgresql" in SERVICES["temporal"]["depends_on"]
    assert "7233:7233" in SERVICES["temporal"]["ports"]


def test_ui_and_worker_reach_the_temporal_service() -> None:
    assert env("temporal-ui")["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert any(p.endswith(":8080") for p in SERVICES["temporal-ui"]["ports"])
    worker = env("worker")
    assert worker["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert worker["TEMPORAL_TASK_QUEUE"] == "durable-teams"


def test_worker_is_built_from_this_project_and_secrets_come_from_the_shell() -> None:
    worker = SERVICES["worker"]
    assert worker["build"] == "."
    assert worker["command"] == ["python", "worker.py"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install" in dockerfile and "worker.py" in dockerfile
    assert env("worker")["OPENAI_API_KEY"] == "${OPENAI_API_KEY:-}"


def test_search_attribute_is_registered_before_the_worker_starts() -> None:
    registrar = SERVICES["temporal-search-attributes"]
    assert "AwaitingHuman --type Bool" in " ".join(registrar["command"])
    condition = SERVICES["worker"]["depends_on"]["temporal-search-attributes"]["condition"]
    assert condition == "service_completed_successfully"
