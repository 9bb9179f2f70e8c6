"""Which HTTP transport the openai client uses: aiohttp's pool by default, httpx when
`$DURABLE_TEAMS_HTTP_CLIENT` says so or the base URL carries credentials, and a bad setting
is one line from the worker and from the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from temporalio.client import Client

from durable_teams.activities.model import (
    HTTP_CLIENT_ENV,
    ModelSettingError,
    OpenAIBackend,
    pooled_http_client,
)

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def test_aiohttp_by_default_httpx_when_asked_or_for_a_url_with_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HTTP_CLIENT_ENV, raising=False)
    assert isinstance(pooled_http_client("http://127.0.0.1:9/v1"), openai.DefaultAioHttpClient)
    assert pooled_http_client("http://user:secret@127.0.0.1:9/v1") is None
    monkeypatch.setenv(HTTP_CLIENT_ENV, "HTTPX")
    assert pooled_http_client("http://127.0.0.1:9/v1") is None
    monkeypatch.setenv(HTTP_CLIENT_ENV, "curl")
    with pytest.raises(ModelSettingError, match=f"{HTTP_CLIENT_ENV} must be aiohttp or httpx, not 'curl'"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1")


def test_a_bad_http_client_setting_is_one_line_from_the_worker() -> None:
    env = {**os.environ, HTTP_CLIENT_ENV: "curl", "TEMPORAL_ADDRESS": "127.0.0.1:1"}
    out = subprocess.run([sys.executable, "worker.py"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr.strip()) == (
        1, "", f"durable-teams worker: {HTTP_CLIENT_ENV} must be aiohttp or httpx, not 'curl'")


async def test_a_bad_http_client_setting_is_one_line_from_the_demo(client: Client) -> None:
    env = {**os.environ, HTTP_CLIENT_ENV: "curl", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "TEMPORAL_ADDRESS": client.service_client.config.target_host}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", "demo", cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 1
    assert err.decode().strip() == (f"durable-teams: ModelSettingError: {HTTP_CLIENT_ENV} must be "
                                    "aiohttp or httpx, not 'curl'")
    assert "Traceback" not in out.decode()
