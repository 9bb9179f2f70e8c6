"""The Temporal Web UI tells conversations apart: a real browser (headless Chromium) on the
embedded server's UI, with two conversations of different teams started by the CLI.

Screenshots go to `$DURABLE_TEAMS_SCREENSHOTS` (docs/history.md's come from
`DURABLE_TEAMS_SCREENSHOTS=docs python -m pytest tests/test_web_ui.py`), else a temporary dir.
The browser is the system's Chromium (Debian's `chromium`); `.ci/run` installs it and sets
DURABLE_TEAMS_REQUIRE_BROWSER=1, so in CI a missing browser fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from durable_teams.client.connection import connect
from durable_teams.examples import example_script, example_teams, faang, support
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.devserver import DevServer, free_port
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.labels import static_summary, task_words
from durable_teams.workflows.messages import ModelCalls
from durable_teams.workflows.state import ConversationInput

from .browser import chromium_or_skip, text_of_all_frames, wait_for_http
from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

# The columns of the workflow list, as the UI's "configure columns" drawer would save them in
# the browser (localStorage, per namespace): the search attributes Team and Task added.
COLUMNS = [{"label": label} for label in
           ("Status", "Workflow ID", "Team", "Task", "Start")]
SHOW_TEAM_AND_TASK = (f"window.localStorage.setItem('namespace-workflow-table-columns', "
                      f"{json.dumps(json.dumps({'default': COLUMNS}))});")


def test_the_task_column_holds_the_first_words_of_the_task() -> None:
    assert task_words("  what's   the\nheadcount? ") == "what's the headcount?"
    long = task_words("word " * 40)
    assert len(long) == 80 and long.endswith("...") and long.startswith("word word")
    assert static_summary("faang", "  what's\nup ") == "faang: what's up"
    assert static_summary("support", None) == "support: chat"


async def test_the_workflow_list_and_a_conversation_in_the_web_ui(tmp_path: Path) -> None:
    browser_path = chromium_or_skip()
    from playwright.async_api import async_playwright

    shots = Path(os.environ.get("DURABLE_TEAMS_SCREENSHOTS") or tmp_path)
    os.makedirs(shots, exist_ok=True)
    port, ui_port = free_port(), free_port()
    suffix = uuid.uuid4().hex[:6]
    asking, answered = f"support-{suffix}", f"faang-{suffix}"
    with DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db") as server:
        client = await connect(server.address)
        env = cli_env(client, "web-ui")
        async with running_worker(client, "web-ui", example_teams(), ScriptedModel(example_script())):
            ran = await run_cli("run", "faang", faang.QUESTION, "--id", answered, env=env, timeout=120)
            assert ran.code == 0, ran
            started = await run_cli("run", "support", support.QUESTION, "--id", asking, "--no-wait",
                                    env=env, timeout=120)
            assert started.out == f"{asking}\n", started
            await pending_question(client.get_workflow_handle(asking))
            wait_for_http(server.ui_url)
            async with async_playwright() as pw:
                chromium = await pw.chromium.launch(executable_path=browser_path, headless=True,
                                                    args=["--no-sandbox"])
                page = await chromium.new_page(viewport={"width": 1600, "height": 520})
                await page.add_init_script(SHOW_TEAM_AND_TASK)
                await page.goto(f"{server.ui_url}/namespaces/default/workflows")
                for workflow_id in (asking, answered):
                    await page.get_by_text(workflow_id, exact=True).first.wait_for(timeout=60_000)
                await page.get_by_text(support.QUESTION[:40]).first.wait_for(timeout=60_000)
                listed_shot = await page.screenshot(path=str(shots / "web-ui-workflows.png"))
                listed = await page.inner_text("body")
                # the Team column is also a filter (the UI's and any client's)
                faang_only = [wf.id async for wf in client.list_workflows('Team = "faang"')]
                rows = {wid: await page.locator("tr", has_text=wid).first.inner_text()
                        for wid in (asking, answered)}

                await page.set_viewport_size({"width": 1400, "height": 760})
                await page.goto(f"{server.ui_url}/namespaces/default/workflows/{asking}")
                await page.get_by_text("User Metadata").first.click(timeout=60_000)
                summary = f"support: {support.QUESTION}"
                details = "Waiting for a person: q1: Sorry to hear that! What's your order number?"
                metadata = await text_of_all_frames(page, [summary, details])
                await page.screenshot(path=str(shots / "web-ui-conversation.png"))
                await chromium.close()
    assert "RUNNING" in listed and "COMPLETED" in listed
    # each row names its team and the first words of its task (the Team and Task columns)
    assert "support" in rows[asking].split() and support.QUESTION[:40] in rows[asking], rows
    assert "faang" in rows[answered].split() and faang.QUESTION[:40] in rows[answered], rows
    assert faang_only == [answered]
    assert summary in metadata and details in metadata
    assert len(listed_shot) > 10_000


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_each_local_model_call_shows_in_the_event_history_with_its_summary(tmp_path: Path) -> None:
    """With `ModelCalls(local=True)` a model call is a marker, not an activity's three events: the
    Event History still lists each one as a Local Activity with our summary (the agent and how
    many messages it was sent), as it does a regular activity's."""
    browser_path = chromium_or_skip()
    from playwright.async_api import async_playwright

    shots = Path(os.environ.get("DURABLE_TEAMS_SCREENSHOTS") or tmp_path)
    os.makedirs(shots, exist_ok=True)
    port, ui_port = free_port(), free_port()
    team = Swarm([Agent("adder", "Adds.", model="scripted", tools=[add])], name="adding",
                 model_calls=ModelCalls(local=True)).compile()
    model = ScriptedModel({"adder": [call("add", a=2, b=3), say("It is 5.")]})
    workflow_id = f"local-calls-{uuid.uuid4().hex[:6]}"
    with DevServer(port=port, ui_port=ui_port, db_file=tmp_path / "t.db") as server:
        client = await connect(server.address)
        async with running_worker(client, "web-ui-local", [team], model):
            handle = await client.start_workflow(TeamWorkflow.run, ConversationInput(team=team.spec, task="2+3?"),
                                                 id=workflow_id, task_queue="web-ui-local")
            result = await handle.result()
        wait_for_http(server.ui_url)
        async with async_playwright() as pw:
            chromium = await pw.chromium.launch(executable_path=browser_path, headless=True, args=["--no-sandbox"])
            page = await chromium.new_page(viewport={"width": 1800, "height": 1000})
            await page.goto(f"{server.ui_url}/namespaces/default/workflows/{workflow_id}")
            await page.get_by_text("Event History").first.click(timeout=60_000)
            calls = ["model: adder (2 messages)", "model: adder (4 messages)"]
            history = await text_of_all_frames(page, [*calls, "tool: add"])
            await page.screenshot(path=str(shots / "web-ui-local-model-calls.png"))
            await chromium.close()
    assert result.answer == "It is 5."
    assert all(summary in history for summary in calls), history[-3000:]
    assert history.count("Local Activity") >= 2 and "Activity Task Scheduled" in history  # the tool: regular
