"""`durable-teams replay` on recorded conversations (docs/replay.md): a routing change, a lost
approval with the refund never run, a stand-in for a call the record does not have, a new
question (stopped, or answered from an answers file), the CLI's verdict, and the HTML report in
Chromium."""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bench.replay import record_examples
from durable_teams.client.checkpoints import run_histories
from durable_teams.client.connection import connect
from durable_teams.encryption.codec import EncryptionKeyError
from durable_teams.examples import faang, faang_teams, replay_candidates, support
from durable_teams.replay.candidate import Candidate
from durable_teams.replay.comparison import parse_fail_on, totals, verdict
from durable_teams.replay.question_book import AnswerRule
from durable_teams.replay.records import Record
from durable_teams.replay.replay_runner import ReplaySettings, replay
from durable_teams.replay.replay_sources import record_from_file, records_of, workflow_ids
from durable_teams.replay.report_page import report_html
from durable_teams.replay.reports import report_markdown
from durable_teams.teams.builders import Agent, CompiledTeam
from durable_teams.teams.tools import tool
from durable_teams.worker.script_files import scripts_for
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, ModelResponse, ToolSpec
from durable_teams.workflows.state import ConversationInput

from .browser import chromium_or_skip
from .conftest import running_worker
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

HISTORIES = Path(__file__).parent / "histories"
FAANG_ROUTE = ["supervisor", "research_expert", "supervisor", "math_expert", "supervisor"]
MATH_FIRST_ROUTE = ["supervisor", "math_expert", "supervisor", "research_expert", "supervisor"]
REFUND = 'execute_refund({"item_id": "item_132612938", "reason": "fell apart after a week"})'


@pytest_asyncio.fixture(scope="module")
async def support_recorded(env: WorkflowEnvironment) -> Record:
    """A support conversation run on the example team: the customer answered the triage
    agent's question and a person approved the refund."""
    _, recorded = await record_examples(env.client, 2)
    assert [(a.question, a.answer, a.approved) for a in recorded.asked] == [
        ("question", "Order 4711", None), ("approval", "", True)]
    return recorded


def counting(team: CompiledTeam, tool: str) -> list[dict]:
    """Calls of `team`'s `tool` that reach its function (it keeps answering as before)."""
    runs: list[dict] = []
    registered = team.tools.get(tool)
    original = registered.fn

    def counted(**kwargs: object) -> object:
        runs.append(kwargs)
        return original(**kwargs)

    counted.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
    registered.fn = counted
    return runs


def scripted(teams: list[CompiledTeam], script: dict) -> Candidate:
    return Candidate(ScriptedModel(teams=script), teams, description="a test candidate")


async def test_faang_routed_to_the_math_expert_first_is_served_web_search_from_the_record(client: Client) -> None:
    record = record_from_file(HISTORIES / "faang.json")
    team = replay_candidates.faang_math_first().compile()
    searches = counting(team, "web_search")
    diff, = await replay(client, [record], scripted([team], replay_candidates.SCRIPT))
    assert (diff.routing_before, diff.routing_after, diff.routing_changed) == (FAANG_ROUTE, MATH_FIRST_ROUTE, True)
    web = [(r.served, r.result) for r in diff.after.tool_runs if r.tool == "web_search"]
    assert web == [("recorded", faang.web_search(""))] and searches == []
    assert diff.tool_changes == [] and diff.served == {"recorded": 5}
    assert (diff.after.status, diff.after.final_answer, diff.answer_diff) == ("completed", faang.ANSWER, [])
    markdown = report_markdown([diff], totals([diff]), [], "math first")
    assert f"- Agents visited, replay: {' → '.join(MATH_FIRST_ROUTE)} **(changed)**" in markdown
    assert "| routed differently | | 1 |" in markdown


async def test_support_without_its_approval_flags_it_and_never_runs_the_refund(
        client: Client, support_recorded: Record, tmp_path: Path) -> None:
    replay_candidates.REFUNDS.clear()
    team = replay_candidates.support_no_approval().compile()
    diff, = await replay(client, [support_recorded], scripted([team], replay_candidates.SCRIPT))
    assert diff.approvals_before == [REFUND] and diff.approvals_after == [] and diff.lost_approvals == [REFUND]
    assert replay_candidates.REFUNDS == [] and diff.real_runs == {"look_up_item": 0, "execute_refund": 0}
    refund = [(r.served, r.result) for r in diff.after.tool_runs if r.tool == "execute_refund"]
    assert refund == [("recorded", "success")]
    assert [(a.question, a.answer, a.answered_by) for a in diff.after.asked] == [
        ("question", "Order 4711", "record")]
    assert verdict(totals([diff]), parse_fail_on(["lost-approval"])) == [
        "lost-approval: 1 approval(s) the record asked were not asked"]


async def test_a_call_the_record_does_not_have_gets_a_marked_stand_in(client: Client, support_recorded: Record) -> None:
    team = replay_candidates.support_no_approval().compile()
    refunds = counting(team, "execute_refund")
    script = {**support.SCRIPT, "issues_and_repairs": [
        call("look_up_item", search_query="boots"),
        call("execute_refund", item_id="item_132612938", reason="the customer is always right"),
        say("Done: your boots are refunded.")]}
    diff, = await replay(client, [support_recorded], scripted([team], {"support": script}),
                         ReplaySettings(allow_live_tools=True))  # allowed, but a refund is not idempotent
    changed = 'execute_refund({"item_id": "item_132612938", "reason": "the customer is always right"})'
    assert diff.stand_ins == [changed] and refunds == []
    stand_in = next(r for r in diff.after.tool_runs if r.tool == "execute_refund")
    assert stand_in.result.startswith("[replay stand-in] execute_refund was not run during this replay")
    assert [(c.change, c.tool) for c in diff.tool_changes] == [("changed", "execute_refund")]
    assert verdict(totals([diff]), parse_fail_on(["changed-tool-calls"])) == [
        "changed-tool-calls: 1 tool call(s) added, removed or changed"]


def asks_which_year() -> tuple[CompiledTeam, dict]:
    team = faang.build()
    math = next(a for a in team.agents if isinstance(a, Agent) and a.name == "math_expert")
    math.tools = [*math.tools, "ask_human"]
    script = {**faang.SCRIPT, "math_expert": [call("ask_human", question="Which year do you mean?"),
                                              *faang.SCRIPT["math_expert"]]}
    return team.compile(), {"faang": script}


async def test_a_new_question_stops_the_conversation_unless_the_answers_file_answers_it(client: Client) -> None:
    record = record_from_file(HISTORIES / "faang.json")
    team, script = asks_which_year()
    stopped, = await replay(client, [record], scripted([team], script))
    assert stopped.after.status == "stopped" and stopped.error is None
    assert stopped.stopped == ("stopped at question q1 from math_expert: 'Which year do you mean?': the record "
                               "has no answer to it, and no --answers rule matches")
    assert verdict(totals([stopped]), parse_fail_on(["stopped"])) != []
    answers = ReplaySettings(answers=[AnswerRule(question="which year", answer="2024")])
    answered, = await replay(client, [record], scripted([team], script), answers)
    assert answered.after.status == "completed" and answered.stopped is None
    assert [(a.answer, a.answered_by) for a in answered.after.asked] == [("2024", "answers file")]


async def test_the_cli_exits_non_zero_on_a_lost_approval(client: Client, support_recorded: Record,
                                                        tmp_path: Path) -> None:
    history, = await run_histories(client, support_recorded.workflow_id)
    exported = tmp_path / "support-boots.json"
    exported.write_text(history.to_json())
    report = tmp_path / "report.json"
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "durable_teams", "replay", str(exported), "--fail-on", "lost-approval",
         "--team", "durable_teams.examples.replay_candidates:SUPPORT_NO_APPROVAL", "--json", str(report)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 4, done.stderr
    assert "threshold crossed: lost-approval: 1 approval(s)" in done.stderr
    assert "**Lost approval:** `" + REFUND + "`" in done.stdout
    data = json.loads(report.read_text())
    assert (data["passed"], data["conversations"][0]["approvals"]["lost"]) == (False, [REFUND])
    assert data["conversations"][0]["real_runs"]["execute_refund"] == 0


async def test_the_html_report_shows_the_transcripts_side_by_side_in_chromium(client: Client, tmp_path: Path) -> None:
    browser_path = chromium_or_skip()
    from playwright.async_api import async_playwright

    record = record_from_file(HISTORIES / "faang.json")
    diff, = await replay(client, [record], scripted([replay_candidates.faang_math_first().compile()],
                                                    replay_candidates.SCRIPT))
    page_file = tmp_path / "report.html"
    page_file.write_text(report_html([diff], totals([diff]), [], "math first"))
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=browser_path, headless=True, args=["--no-sandbox"])
        try:
            page = await chromium.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(page_file.as_uri())
            assert await page.inner_text("#verdict") == "Passed: no threshold crossed."
            before, after = page.locator(".before"), page.locator(".after")
            box_before, box_after = await before.bounding_box(), await after.bounding_box()
            assert box_before and box_after and box_after["x"] > box_before["x"] + box_before["width"] - 1
            assert box_after["y"] == box_before["y"]
            steps = [await s.inner_text() for s in await after.locator(".step.model b").all()]
            assert steps == MATH_FIRST_ROUTE[:1] + ["math_expert"] * 5 + ["supervisor", "research_expert",
                                                                          "research_expert", "supervisor"]
            assert await page.locator(".after .step.tool.recorded").count() == 5
        finally:
            await chromium.close()


async def test_a_conversation_is_read_by_its_workflow_id_and_found_by_a_query(
        client: Client, support_recorded: Record) -> None:
    by_id, = await records_of(client, [support_recorded.workflow_id])
    assert by_id.to_json() == support_recorded.to_json()
    query = f"WorkflowId = '{support_recorded.workflow_id}'"
    found = await until(lambda: workflow_ids(client, query), f"{support_recorded.workflow_id} listed")
    assert found == [support_recorded.workflow_id]


async def test_a_history_encrypted_at_rest_is_read_with_the_key_and_refused_without(env: WorkflowEnvironment) -> None:
    address = env.client.service_client.config.target_host
    keyed = await connect(address, encryption=f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    recorded, = await record_examples(keyed, 1)
    assert recorded.turns[0].answer == faang.ANSWER and len(recorded.tool_runs) == 5
    with pytest.raises(EncryptionKeyError, match="this conversation is encrypted .key id 'k1'. and no key"):
        await records_of(await connect(address, encryption={}), [recorded.workflow_id])


async def test_the_unchanged_team_replays_to_no_change_with_every_answer_and_result_from_the_record(
        client: Client, support_recorded: Record) -> None:
    team = support.build().compile()
    refunds = counting(team, "execute_refund")
    diff, = await replay(client, [support_recorded], scripted([team], {"support": support.SCRIPT}))
    assert diff.routing_after == diff.routing_before == ["triage_agent", "issues_and_repairs", "triage_agent"]
    assert (diff.tool_changes, diff.lost_approvals, diff.answer_diff, diff.stand_ins) == ([], [], [], [])
    assert diff.approvals_after == [REFUND] and diff.served == {"recorded": 2} and refunds == []
    assert [(a.question, a.answered_by) for a in diff.after.asked] == [("question", "record"), ("approval", "record")]
    assert verdict(totals([diff]), parse_fail_on(["changed-tool-calls,lost-approval,stopped,changed-routing"])) == []


async def test_a_nested_teams_steps_are_read_from_its_child_workflows(client: Client, task_queue: str) -> None:
    team = faang_teams.build().compile()
    script = scripts_for([team], {"faang-teams": faang_teams.SCRIPT})  # its nested teams' too
    async with running_worker(client, task_queue, [team], ScriptedModel(teams=script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang.QUESTION, set_search_attributes=False),
            id=f"faang-teams-{task_queue}", task_queue=task_queue)
        await handle.result()
    record, = await records_of(client, [handle.id])
    assert record.agents_visited == ["top_supervisor", "research_team", "research_expert", "research_team",
                                     "top_supervisor", "math_team", "math_expert", "math_team", "top_supervisor"]
    assert [r.tool for r in record.tool_runs] == ["web_search", "add", "add", "add", "add"]
    file_only = record_from_file(HISTORIES / "faang_teams.json")  # a file holds the parent's steps only
    assert file_only.tool_runs == [] and "replay by workflow id" in file_only.notes[0]
    diff, = await replay(client, [record], scripted([team], script))
    assert diff.routing_after == record.agents_visited and diff.tool_changes == [] and diff.served == {"recorded": 5}


class Stalled(ScriptedModel):
    """A model that never answers (until its call is cancelled)."""

    async def complete(self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        await asyncio.sleep(3600)
        raise AssertionError("not reached")


async def test_a_conversation_that_takes_too_long_or_fails_is_reported_and_fails_the_verdict(client: Client) -> None:
    record = record_from_file(HISTORIES / "faang.json")
    team = faang.build().compile()
    slow, = await replay(client, [record], Candidate(Stalled(), [team]), ReplaySettings(timeout_seconds=2))
    assert (slow.error, slow.after.status) == ("did not finish within 2 s", "terminated")
    unscripted, = await replay(client, [record], scripted([team], {}))
    assert unscripted.error is not None and unscripted.error.startswith(
        "model call of supervisor failed: The scripted model has no replies for team 'faang'")
    assert verdict(totals([slow, unscripted]), {}) == [
        "failed: 2 conversation(s) could not be replayed (the report says why)"]


async def test_an_idempotent_tool_runs_for_real_only_when_live_tools_are_allowed(client: Client) -> None:
    record = record_from_file(HISTORIES / "faang.json")
    searches: list[str] = []

    @tool(idempotent=True)
    def web_search(query: str) -> str:
        """Search the web for information."""
        searches.append(query)
        return faang.web_search(query)

    team = faang.build()
    research = next(a for a in team.agents if isinstance(a, Agent) and a.name == "research_expert")
    research.tools = [web_search]
    script = {"faang": {**faang.SCRIPT, "research_expert": [
        call("web_search", query="FAANG headcount 2024"), *faang.SCRIPT["research_expert"][1:]]}}
    kept, = await replay(client, [record], scripted([team.compile()], script))
    assert kept.stand_ins == ['web_search({"query": "FAANG headcount 2024"})'] and searches == []
    live, = await replay(client, [record], scripted([team.compile()], script), ReplaySettings(allow_live_tools=True))
    assert live.served == {"live": 1, "recorded": 4} and searches == ["FAANG headcount 2024"]
    assert live.real_runs["web_search"] == 1
