"""`durable-teams replay` off the happy path: what it cannot use is one line and exit status 1
(2 for a usage error), never a traceback, and nothing starts before the inputs are read."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI, completion

pytestmark = [pytest.mark.pure, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
FAANG = str(ROOT / "tests" / "histories" / "faang.json")


def replay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "durable_teams", "replay", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})}, cwd=ROOT)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("args", "line"), [
    (["not-a-history.json"], "durable-teams replay: cannot read not-a-history.json: No such file or directory"),
    ([FAANG, "--fail-on", "cheaper"], "durable-teams replay: --fail-on 'cheaper': known rules are"),
    ([FAANG, "--answers", "missing-answers.json"], "durable-teams replay: answers file missing-answers.json:"),
    ([FAANG, "--instructions", "no-equals-sign"], "durable-teams replay: --instructions 'no-equals-sign': "
                                                   "expected AGENT=TEXT or AGENT=@file"),
    ([FAANG, "--team", "no_such_module:TEAMS"], "durable-teams replay: cannot load teams from 'no_such_module:TEAMS'"),
], ids=["missing file", "unknown rule", "missing answers", "bad instructions", "missing module"])
def test_what_it_cannot_use_is_one_line(args: list[str], line: str) -> None:
    done = replay(*args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(line) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_workflow_id_without_a_server_says_where_it_looked() -> None:
    port = closed_port()
    done = replay("support-1a2b", env={"TEMPORAL_ADDRESS": f"127.0.0.1:{port}"})
    assert (done.returncode, done.stderr.strip()) == (1, f"durable-teams replay: no Temporal server at 127.0.0.1:{port}")


def test_nothing_to_replay_is_a_usage_error() -> None:
    done = replay()
    assert done.returncode == 2 and "give history files, workflow ids or --query" in done.stderr


def test_an_agent_the_team_lacks_fails_that_conversation_and_the_verdict() -> None:
    done = replay(FAANG, "--instructions", "ghost=Be brief.")
    assert done.returncode == 4, done.stderr
    assert "**Failed:** faang: team 'faang' has no agent ghost (agents: math_expert, research_expert, supervisor)" \
        in done.stdout
    assert "threshold crossed: failed: 1 conversation(s) could not be replayed" in done.stderr


async def test_a_live_candidate_gets_the_new_model_and_instructions_and_is_priced(tmp_path: Path) -> None:
    """`--model-endpoint`, `--model`, `--instructions` and `--prices`: the endpoint is asked
    with the candidate's model and prompt; its tokens make the cost, up from nothing."""
    prices = tmp_path / "prices.json"
    prices.write_text('{"gpt-4o": {"input_per_million": 2.5, "output_per_million": 10}}')
    with FakeOpenAI(script=lambda path, body: (200, completion("It is 1,977,586."), {})) as fake:
        done = await asyncio.to_thread(
            replay, FAANG, "--model-endpoint", fake.base_url, "--model", "gpt-4o", "--instructions",
            "supervisor=Answer at once.", "--prices", str(prices), "--fail-on", "cost-increase=50", "--json", "-")
    assert done.returncode == 4, done.stderr
    assert {r["model"] for r in fake.requests} == {"gpt-4o"}
    assert fake.requests[0]["messages"][0] == {"role": "system", "content": "Answer at once."}
    report = json.loads(done.stdout)
    conversation = report["conversations"][0]
    assert conversation["routing"]["after"] == ["supervisor"]
    assert [c["change"] for c in conversation["tool_calls"]] == ["removed"] * 5
    after = conversation["usage"]["after"]
    assert (after["input_tokens"], after["output_tokens"]) == (11, 7)
    assert after["cost"] == pytest.approx(11 * 2.5e-6 + 7 * 10e-6)
    assert "threshold crossed: cost-increase: up from nothing (limit 50 %)" in done.stderr
