"""The pure parts of a replay (docs/replay.md): a conversation's record read from its history,
which tool results and answers a replay reuses, the comparison, the verdict and the reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from durable_teams.examples import faang
from durable_teams.replay.comparison import (
    compare,
    cost_increase,
    parse_fail_on,
    tool_changes,
    totals,
    verdict,
)
from durable_teams.replay.history_records import UnreadableHistory, values
from durable_teams.replay.question_book import AnswerRule, QuestionBook, load_answers
from durable_teams.replay.records import Asked, ModelCall, Record, ToolRun, TurnRecord
from durable_teams.replay.replay_sources import record_from_file
from durable_teams.replay.report_page import report_html
from durable_teams.replay.reports import report_json, report_markdown
from durable_teams.replay.tool_book import ToolBook
from durable_teams.workflows.usage import ModelPrice

pytestmark = pytest.mark.pure

HISTORIES = Path(__file__).parent / "histories"
REFUND_ARGS = '{"item_id": "item_132612938", "reason": "fell apart after a week"}'


def test_the_faang_history_reads_as_its_routing_tool_calls_and_answer() -> None:
    record = record_from_file(HISTORIES / "faang.json")
    assert (record.workflow_id, record.team, record.status, record.task) == ("faang", "faang", "completed", faang.QUESTION)
    assert record.agents_visited == ["supervisor", "research_expert", "supervisor", "math_expert", "supervisor"]
    assert [(r.tool, r.arguments, r.result) for r in record.tool_runs][:2] == [
        ("web_search", '{"query": "Combined headcount of FAANG companies in 2024"}', faang.web_search("")),
        ("add", '{"a": 67317, "b": 164000}', "231317.0")]
    assert len(record.tool_runs) == 5 and len(record.model_calls) == 10
    assert [(t.number, t.answer, t.agent) for t in record.turns] == [(1, faang.ANSWER, "supervisor")]
    assert record.spec is not None and record.spec["supervisor"]["name"] == "supervisor"


def test_questions_and_answers_are_read_from_the_memo_and_the_answer_updates() -> None:
    record = record_from_file(HISTORIES / "support_waiting_approval.json")
    assert record.status == "running"
    assert [(a.question_id, a.question, a.agent, a.answer, a.approved, a.turn) for a in record.asked] == [
        ("q1", "question", "triage_agent", "Order 4711", None, 1),
        ("q2", "approval", "issues_and_repairs", None, None, 1)]
    assert record.asked[1].tool == "execute_refund"


def test_turns_of_a_conversation_and_its_continue_as_new_are_read_in_order() -> None:
    acme = record_from_file(HISTORIES / "acme_conversation.json")
    assert [t.text for t in acme.turns] == ["I keep failing to catch a roadrunner. Want to buy something.",
                                            "How much is it?", "My boots fell apart, refund them."]
    assert acme.turns[1].answer == "Just $9,999,999. It only works on Tuesdays." and acme.status == "continued"
    local = record_from_file(HISTORIES / "local_model_calls.json")  # model calls as local activities
    assert [t.answer for t in local.turns] == ["echo 0", "echo 1", "echo 2"]


def test_a_file_that_is_no_conversation_history_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(UnreadableHistory, match="is not an exported history"):
        record_from_file(broken)
    with pytest.raises(UnreadableHistory, match="cannot read"):
        record_from_file(tmp_path / "missing.json")
    empty = tmp_path / "empty.json"
    empty.write_text('{"events": []}')
    with pytest.raises(UnreadableHistory, match="an empty history"):
        record_from_file(empty)
    encrypted = Payload(metadata={"encoding": b"binary/encrypted"}, data=b"...")
    with pytest.raises(UnreadableHistory, match="needs its key"):
        values([encrypted])


def recorded(*runs: ToolRun, asked: tuple[Asked, ...] = ()) -> Record:
    return Record("c1", "support", None, "refund", True, steps=[*runs, *asked])


def test_a_call_as_recorded_gets_the_recorded_result_and_others_never_run_a_refund() -> None:
    book = ToolBook(recorded(ToolRun("execute_refund", REFUND_ARGS, "success", "repairs", 1),
                             ToolRun("look_up_item", '{"search_query": "boots"}', "item_1", "repairs", 1)),
                    allow_live=True)
    respelled = '{"reason":"fell apart after a week",  "item_id":"item_132612938"}'
    assert book.decide("execute_refund", respelled, idempotent=False).content == "success"
    other = book.decide("execute_refund", '{"item_id": "item_9"}', idempotent=False)
    assert (other.served, other.is_error) == ("stand-in", True)
    assert other.content == ("[replay stand-in] execute_refund was not run during this replay: the record has no "
                             "call with these arguments, and it is not declared idempotent.")
    assert book.decide("look_up_item", '{"search_query": "shoes"}', idempotent=True).served == "live"
    assert ToolBook(recorded(), allow_live=False).decide("look_up_item", "{}", idempotent=True).content.endswith(
        "live tools were not allowed (--allow-live-tools).")
    assert book.real_runs() == {"execute_refund": 0, "look_up_item": 1}


def test_recorded_answers_go_to_the_same_approval_and_the_same_turns_question() -> None:
    book = QuestionBook(recorded(asked=(
        Asked("q1", "question", "triage", "What's your order number?", 1, answer="Order 4711"),
        Asked("q2", "approval", "repairs", "Approve?", 1, "execute_refund", REFUND_ARGS, answer="", approved=True))))
    other_refund = {"kind": "approval", "tool": "execute_refund", "arguments": '{"item_id": "item_9"}'}
    assert book.answer_for(other_refund, 1) is None
    same = {"kind": "approval", "tool": "execute_refund", "arguments": REFUND_ARGS.replace(", ", ",")}
    assert book.answer_for(same, 1) is not None and book.answer_for(same, 1) is None  # answered once
    assert book.answer_for({"kind": "question", "agent": "triage", "text": "Order number?"}, 2) is None
    reworded = book.answer_for({"kind": "question", "agent": "triage", "text": "Your order number, please?"}, 1)
    assert reworded is not None and (reworded.text, reworded.by) == ("Order 4711", "record")
    rules = QuestionBook(recorded(), [AnswerRule(question="YEAR", answer="2024"),
                                      AnswerRule(tool="execute_refund", approve=False, answer="no")])
    year = rules.answer_for({"kind": "question", "text": "Which year?"}, 1)
    assert year is not None and (year.text, year.by) == ("2024", "answers file")
    denied = rules.answer_for(other_refund, 1)
    assert denied is not None and denied.approved is False


def test_an_answers_file_that_cannot_be_used_says_why(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    for content, why in (("{}", "a JSON list of rules, not a dict"),
                         ('[{"answer": "x"}]', 'rule 1 needs "question" or "tool"'),
                         ('[{"tool": "execute_refund"}]', 'needs "approve": true or false'),
                         ("[", "answers file")):
        path.write_text(content)
        with pytest.raises(ValueError, match=why):
            load_answers(path)
    path.write_text('[{"question": "order", "answer": "4711"}]')
    assert load_answers(path) == [AnswerRule(question="order", answer="4711")]


def run(tool: str, args: str) -> ToolRun:
    return ToolRun(tool, args, "ok", "a", 1)


def test_tool_calls_added_removed_and_changed() -> None:
    before = [run("add", '{"a": 1}'), run("add", '{"a": 2}'), run("web_search", '{"q": "x"}')]
    after = [run("add", '{"a":1}'), run("add", '{"a": 3}'), run("multiply", '{"a": 2}')]
    assert [(c.change, c.tool, c.before, c.after) for c in tool_changes(before, after)] == [
        ("changed", "add", '{"a": 2}', '{"a": 3}'), ("removed", "web_search", '{"q": "x"}', None),
        ("added", "multiply", None, '{"a": 2}')]


def conversation(approvals: int, tokens: int, answer: str, agents: list[str]) -> Record:
    steps: list = [ModelCall(agent, "gpt-4o", "", [], 1, tokens, 0) for agent in agents]
    steps += [Asked(f"q{n}", "approval", "repairs", "?", 1, "execute_refund", REFUND_ARGS, approved=True)
              for n in range(approvals)]
    return Record("c1", "support", None, "refund", True, turns=[TurnRecord(1, "refund", answer)], steps=steps)


def test_the_verdict_flags_a_lost_approval_routing_and_a_cost_increase() -> None:
    prices = {"gpt-4o": ModelPrice(input_per_million=2.5, output_per_million=10)}
    diff = compare(conversation(1, 1000, "Refunded.", ["triage", "repairs"]),
                   conversation(0, 1300, "Refunded!", ["repairs"]), prices)
    assert diff.lost_approvals == [f"execute_refund({REFUND_ARGS})"] and diff.routing_changed
    assert diff.answer_diff == ["- Refunded.", "+ Refunded!"]
    assert (diff.usage_before.cost, diff.usage_after.cost) == (pytest.approx(0.005), pytest.approx(0.00325))
    total = totals([diff])
    assert cost_increase(total) == pytest.approx(-35.0)
    assert verdict(total, parse_fail_on(["lost-approval,changed-routing", "cost-increase=10"])) == [
        "lost-approval: 1 approval(s) the record asked were not asked",
        "changed-routing: 1 conversation(s) routed differently"]
    pricier = totals([compare(conversation(0, 1000, "a", ["x"]), conversation(0, 1300, "a", ["x"]))])
    assert verdict(pricier, parse_fail_on(["cost-increase=25%"])) == ["cost-increase: up 30.0 % (limit 25 %)"]
    assert verdict(pricier, parse_fail_on(["cost-increase=30"])) == []
    for bad in ("costs", "cost-increase=lots", "lost-approval=2"):
        with pytest.raises(ValueError, match="--fail-on"):
            parse_fail_on([bad])


def test_the_reports_say_what_changed() -> None:
    diff = compare(conversation(1, 10, "Refunded.", ["triage", "repairs"]), conversation(0, 10, "Refunded.", ["repairs"]))
    total = totals([diff])
    crossed = verdict(total, parse_fail_on(["lost-approval"]))
    markdown = report_markdown([diff], total, crossed, "no approval")
    assert f"- **Lost approval:** `execute_refund({REFUND_ARGS})` (the replay did not ask)" in markdown
    assert "**Verdict: failed.** lost-approval: 1 approval(s)" in markdown
    assert "- Agents visited, replay: repairs **(changed)**" in markdown
    data = json.loads(report_json([diff], total, crossed, "no approval"))
    assert data["passed"] is False and data["conversations"][0]["routing"]["after"] == ["repairs"]
    page = report_html([diff], total, crossed, "no <approval>")
    assert "no &lt;approval&gt;" in page and "<script" not in page and "http" not in page.replace("<!doctype html>", "")


def test_a_recorded_result_keeps_its_handoff_and_context_updates() -> None:
    """A swarm tool that returned an agent (or set context variables) does the same in a replay."""
    handed = ToolRun("transfer_to_sales", "{}", "Handing over.", "triage", 1, context_updates={"tier": "gold"},
                     handoff_to="sales")
    decision = ToolBook(recorded(handed)).decide("transfer_to_sales", "{}", idempotent=False)
    assert decision.recorded is not None
    assert (decision.served, decision.recorded.handoff_to, decision.recorded.context_updates) == (
        "recorded", "sales", {"tier": "gold"})


def test_the_markdown_report_lists_unchanged_conversations_in_a_line() -> None:
    same = compare(conversation(1, 10, "Refunded.", ["triage"]), conversation(1, 12, "Refunded.", ["triage"]))
    other = compare(conversation(0, 10, "Refunded.", ["triage"]), conversation(0, 10, "Not refunded.", ["triage"]))
    markdown = report_markdown([same, other], totals([same, other]), [], "a candidate")
    assert not same.changed and other.changed
    assert markdown.count("## c1 (support)") == 1 and "| final answers changed | | 1 |" in markdown
    assert markdown.rstrip().endswith("## Unchanged\n\n1 conversation(s) replayed with the same routing, tool "
                                      "calls, approvals and final answer: c1 (support).")
