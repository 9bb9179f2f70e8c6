"""Decoded payloads in the Web UI: `durable-teams server-start --codec-server` starts the embedded
server with its Web UI pointed at a codec server it starts too; with DURABLE_TEAMS_ENCRYPTION_KEY
set, a browser on that UI reads an encrypted conversation in plain text. The codec server allows
the UI's origin on the configured UI port."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable_teams.client.connection import connect
from durable_teams.encryption.codec import EncryptionCodec, parse_keys
from durable_teams.encryption.codec_server import default_origins, serve
from durable_teams.examples import faang
from durable_teams.worker.devserver import DevServer, free_port
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .browser import chromium_or_skip, text_of_all_frames, wait_for_http
from .conftest import running_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_the_codec_server_allows_the_ui_on_its_configured_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TEAMS_UI_PORT", "9555")
    monkeypatch.setenv("DURABLE_TEAMS_CODEC_ORIGINS", "https://ui.example.com/, http://10.0.0.5:8233")
    origins = default_origins()
    assert {"http://localhost:9555", "http://127.0.0.1:9555", "https://ui.example.com",
            "http://10.0.0.5:8233", "http://localhost:8080"} <= set(origins)
    server = serve(EncryptionCodec(parse_keys(f"k1:{base64.b64encode(os.urandom(32)).decode()}")), port=0)
    port = server.server_address[1]
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        def preflight(origin: str) -> str | None:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/default/decode", method="OPTIONS",
                                             headers={"Origin": origin})
            with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - loopback
                return answer.headers.get("Access-Control-Allow-Origin")

        assert preflight("http://127.0.0.1:9555") == "http://127.0.0.1:9555"
        assert preflight("http://127.0.0.1:9556") is None
    finally:
        server.shutdown()
        server.server_close()


def test_server_start_with_a_codec_server_needs_the_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DURABLE_TEAMS_", "TEMPORAL_"))}
    env |= {"DURABLE_TEAMS_DB": str(tmp_path / "t.db")}
    ran = subprocess.run([sys.executable, "-m", "durable_teams", "server-start", "--port", str(free_port()),
                          "--codec-server", str(free_port())], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1
    assert ran.stderr.strip() == ("durable-teams: A codec server needs the payloads' key: set "
                                  "DURABLE_TEAMS_ENCRYPTION_KEY (or DURABLE_TEAMS_ENCRYPTION_KEY_FILE)")
    assert not (tmp_path / "t.pid").exists()  # no server left running


@pytest.fixture
def server_with_codec(tmp_path: Path) -> Iterator[tuple[DevServer, dict[str, str], str]]:
    """`durable-teams server-start --codec-server` in a process, stopped by `server-stop`."""
    key = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DURABLE_TEAMS_", "TEMPORAL_"))}
    env |= {"DURABLE_TEAMS_DB": str(tmp_path / "t.db"), "DURABLE_TEAMS_ENCRYPTION_KEY": key}
    ports = ["--port", str(port), "--ui-port", str(ui_port)]
    started = subprocess.run([sys.executable, "-m", "durable_teams", "server-start", *ports,
                              "--codec-server", str(codec_port)], env=env, capture_output=True, text=True, timeout=90)
    try:
        assert started.returncode == 0, started.stderr
        assert f"Codec server: http://127.0.0.1:{codec_port}" in started.stdout
        yield DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db", codec_port=codec_port), env, key
    finally:
        subprocess.run([sys.executable, "-m", "durable_teams", "server-stop", *ports], env=env,
                       capture_output=True, timeout=60)


async def test_the_web_ui_shows_an_encrypted_conversation_decoded(
        server_with_codec: tuple[DevServer, dict[str, str], str]) -> None:
    browser_path = chromium_or_skip()
    from playwright.async_api import async_playwright

    server, _, key = server_with_codec
    client = await connect(server.address, encryption=key)
    workflow_id = f"faang-{uuid.uuid4().hex[:8]}"
    compiled = faang.build().compile()
    async with running_worker(client, "codec-ui", [compiled], ScriptedModel(faang.SCRIPT)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION),
            id=workflow_id, task_queue="codec-ui")
        assert (await handle.result()).answer == faang.ANSWER
    # what the server holds is ciphertext: the answer is not in its history
    raw = await (await connect(server.address)).get_workflow_handle(workflow_id).fetch_history()
    assert "1,977,586" not in raw.to_json()
    wait_for_http(server.ui_url)
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=browser_path, headless=True, args=["--no-sandbox"])
        page = await chromium.new_page(viewport={"width": 1400, "height": 900})
        await page.goto(f"{server.ui_url}/namespaces/default/workflows/{workflow_id}")
        text = await text_of_all_frames(page, [faang.ANSWER], within=60)
        await chromium.close()
    assert faang.ANSWER in text
