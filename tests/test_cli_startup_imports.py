"""A command loads only what it needs: `openai` (with aiohttp, a second of CPU) only where an
OpenAI-backed model is built, the gateway's server only for the commands that serve, Temporal's
client not for `memory`. The tests
start the CLI as a process some 150 times, and a person waits for each command; what a command
imports is checked here, in a fresh interpreter, rather than how long it takes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import contextlib, io, json, os, sys
for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(name, None)
HEAVY = ("temporalio", "openai", "aiohttp", "starlette", "uvicorn")
loaded = {}

def loaded_after(step, run):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        run()
    loaded[step] = [name for name in HEAVY if name in sys.modules]

from durable_teams.cli.main import main
loaded_after("memory --help", lambda: main(["memory", "--help"]))
loaded_after("--help", lambda: main(["--help"]))
loaded_after("status --help", lambda: main(["status", "--help"]))
loaded_after("replay --help", lambda: main(["replay", "--help"]))

def scripted_worker():
    from durable_teams.examples import example_teams
    from durable_teams.worker.build import build_worker  # noqa: F401
    from durable_teams.worker.run import model_backend
    model_backend(teams=example_teams())

loaded_after("a scripted worker's model", scripted_worker)
loaded_after("serve --help", lambda: main(["serve", "--help"]))

def openai_model():
    from durable_teams.activities.model import OpenAIBackend
    OpenAIBackend(api_key="sk-not-used")

loaded_after("an OpenAI-backed model", openai_model)
print(json.dumps(loaded))
"""


@pytest.mark.slow  # a Python process of its own
def test_commands_import_openai_and_the_server_only_when_they_use_them() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "openai" in loaded.pop("an OpenAI-backed model")  # the probe sees an import when there is one
    assert loaded == {
        "memory --help": [],  # the memory store needs no Temporal
        "--help": ["temporalio"],
        "status --help": ["temporalio"],
        "replay --help": ["temporalio"],
        "a scripted worker's model": ["temporalio"],
        "serve --help": ["temporalio", "starlette"],  # the gateway's app, which `serve` checks it can build
    }
