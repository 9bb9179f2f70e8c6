"""The gateway page's curl examples (docs/gateway.md), run with the real curl against a live
gateway (with a token, as the page shows) and a worker serving the example teams: each command
exactly as written, except the gateway's port (a free one, not 8000). Commands run in order, as
a person would; before answering a question, the runner waits until the question is asked.
Any HTTP error fails (curl's --fail-with-body): a 415 for a missing Content-Type would show."""

from __future__ import annotations

import asyncio
import os
import re
import shutil

import pytest
from temporalio.client import Client

from durable_teams.examples import example_script, example_teams, support
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .doc_pages import ROOT, blocks
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

PAGE = ROOT / "docs" / "gateway.md"
ANSWER = re.compile(r"localhost:8000/threads/([\w-]+)/questions/(q\d+)")

PRELUDE = """set -euo pipefail
curl() { command curl --silent --show-error --fail-with-body --max-time 60 "$@"; echo; }
wait_question() {  # until thread $1 has question $2 pending (a person reads it, then answers)
    for _ in $(seq 600); do
        command curl -s -H "$H" "$GATEWAY/threads/$1" | grep -q "\\"question_id\\":\\"$2\\"" && return 0
        sleep 0.1
    done
    echo "question $2 of $1 was never asked" >&2; return 1
}
"""


def curl_blocks() -> list[str]:
    return [b.code for b in blocks(PAGE) if b.lang == "bash" and "curl " in b.code]


def paced(code: str, gateway: str) -> str:
    """The block with the gateway's address, each answer after its question is asked."""
    lines = []
    for line in code.splitlines():
        answer = ANSWER.search(line)
        if answer and " -d " in line:
            lines.append(f"wait_question {answer.group(1)} {answer.group(2)}")
        lines.append(line.replace("localhost:8000", gateway.removeprefix("http://")))
    return PRELUDE + f"GATEWAY={gateway}\n" + "\n".join(lines) + "\n"


def test_the_page_has_one_curl_block_that_sends_json_with_every_post() -> None:
    found = curl_blocks()
    assert len(found) == 1
    posts = [line for line in found[0].splitlines() if line.startswith("curl") and " -d " in line]
    assert len(posts) == 5 and all('-H "$J"' in line for line in posts), posts
    assert "J='Content-Type: application/json'" in found[0]


async def test_the_curl_examples_run_as_written(client: Client, task_queue: str) -> None:
    if shutil.which("curl") is None:
        if os.environ.get("DURABLE_TEAMS_REQUIRE_CURL"):
            pytest.fail("curl is missing (apt-get install curl); CI requires it")
        pytest.skip("curl is not installed (apt-get install curl)")
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, example_teams(), ScriptedModel(example_script())), \
            running_gateway(client, task_queue, tokens=["tok1"]) as gateway:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", paced(curl_blocks()[0], gateway.replace("127.0.0.1", "localhost")),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=240)
        # the control: the first POST without the JSON header is refused, and says what to add
        bare = await asyncio.create_subprocess_exec(
            "curl", "-s", "-w", "\n%{http_code}", "-H", "Authorization: Bearer tok1", f"{gateway}/threads",
            "-d", '{"team": "faang"}', stdout=asyncio.subprocess.PIPE)
        refused = (await asyncio.wait_for(bare.communicate(), timeout=60))[0].decode()
    assert refused.endswith("\n415") and "Content-Type: application/json" in refused, refused
    text = out.decode()
    assert proc.returncode == 0, f"{text}\n{err.decode()}"
    assert '{"thread_id":"faang-1a2b"' in text.replace(" ", "")
    assert "event: done" in text and "The combined headcount of the FAANG companies in 2024 is 1,977,586." in text
    assert '"question_id":"q1","accepted":true' in text.replace(" ", "")
    assert '"question_id":"q2","accepted":true' in text.replace(" ", "")
    assert support.ANSWER in text and support.REFUNDS == [("item_132612938", "fell apart after a week")]
