"""A replay's report as Markdown (for people and pull requests) and JSON (for programs) (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from durable_teams.replay.comparison import ConversationDiff, Totals, Usage, cost_increase


def _cost(value: float | None) -> str:
    return "unknown (no price table)" if value is None else f"{value:.4f}"


def _route(agents: list[str]) -> str:
    return " → ".join(agents) or "(no model call)"


def conversation_json(diff: ConversationDiff) -> dict[str, Any]:
    return {
        "workflow_id": diff.workflow_id, "team": diff.team,
        "status": {"before": diff.before.status, "after": diff.after.status},
        "stopped": diff.stopped, "error": diff.error,
        "routing": {"before": diff.routing_before, "after": diff.routing_after, "changed": diff.routing_changed},
        "tool_calls": [asdict(c) for c in diff.tool_changes],
        "approvals": {"before": diff.approvals_before, "after": diff.approvals_after, "lost": diff.lost_approvals},
        "final_answer": {"before": diff.before.final_answer, "after": diff.after.final_answer,
                         "changed": diff.answer_changed, "diff": diff.answer_diff},
        "usage": {"before": asdict(diff.usage_before), "after": asdict(diff.usage_after)},
        "tools_served": diff.served, "stand_ins": diff.stand_ins, "real_runs": diff.real_runs,
        "transcripts": {"before": diff.before.to_json(), "after": diff.after.to_json()},
    }


def report_json(diffs: list[ConversationDiff], total: Totals, crossed: list[str], candidate: str) -> str:
    return json.dumps({"candidate": candidate, "totals": asdict(total), "cost_increase_percent": _finite(
        cost_increase(total)), "passed": not crossed, "thresholds_crossed": crossed,
        "conversations": [conversation_json(d) for d in diffs]}, indent=2, ensure_ascii=False)


def _finite(value: float) -> float | None:
    return None if value == float("inf") else round(value, 2)


def _usage_rows(before: Usage, after: Usage) -> list[str]:
    return [f"| tokens (in / out) | {before.input_tokens:,} / {before.output_tokens:,} "
            f"| {after.input_tokens:,} / {after.output_tokens:,} |",
            f"| cost | {_cost(before.cost)} | {_cost(after.cost)} |",
            f"| latency (s, less waits for people) | {before.seconds:.2f} | {after.seconds:.2f} |"]


def totals_markdown(total: Totals, crossed: list[str]) -> list[str]:
    b, a = total.before, total.after
    lines = ["| | record | replay |", "|---|---|---|",
             f"| conversations | {total.conversations} | {total.conversations - total.stopped - total.failed} "
             f"finished, {total.stopped} stopped, {total.failed} failed |",
             f"| routed differently | | {total.routing_changed} |",
             f"| tool calls added, removed or changed | | {total.tool_calls_changed} |",
             f"| approvals asked | {total.approvals_before} | {total.approvals_after} "
             f"({total.lost_approvals} lost) |",
             f"| final answers changed | | {total.answers_changed} |",
             f"| stand-in tool results | | {total.stand_ins} |",
             f"| tokens (in / out) | {b['input_tokens']:,} / {b['output_tokens']:,} "
             f"| {a['input_tokens']:,} / {a['output_tokens']:,} |",
             f"| cost | {_cost(b['cost'])} | {_cost(a['cost'])} |",
             f"| latency (s) | {b['seconds']:.2f} | {a['seconds']:.2f} |", ""]
    if crossed:
        lines += ["**Verdict: failed.** " + "; ".join(crossed), ""]
    else:
        lines += ["**Verdict: passed** (no `--fail-on` threshold crossed).", ""]
    return lines


def conversation_markdown(diff: ConversationDiff) -> list[str]:
    lines = [f"## {diff.workflow_id} ({diff.team})", ""]
    if diff.error:
        lines += [f"**Failed:** {diff.error}", ""]
    if diff.stopped:
        lines += [f"**Stopped:** {diff.stopped}", ""]
    mark = " **(changed)**" if diff.routing_changed else ""
    lines += [f"- Agents visited, record: {_route(diff.routing_before)}",
              f"- Agents visited, replay: {_route(diff.routing_after)}{mark}"]
    for change in diff.tool_changes:
        if change.change == "changed":
            lines.append(f"- Tool call changed: `{change.tool}({change.before})` → `{change.tool}({change.after})`")
        else:
            lines.append(f"- Tool call {change.change}: `{change.tool}({change.before or change.after})`")
    lines.append(f"- Approvals asked, record: {', '.join(diff.approvals_before) or 'none'}; "
                 f"replay: {', '.join(diff.approvals_after) or 'none'}")
    lines += [f"- **Lost approval:** `{lost}` (the replay did not ask)" for lost in diff.lost_approvals]
    served = ", ".join(f"{n} {how}" for how, n in sorted(diff.served.items())) or "no tool calls"
    lines.append(f"- Tool results in the replay: {served}")
    lines += [f"- Stand-in (not run): `{call}`" for call in diff.stand_ins]
    real = ", ".join(f"{tool} {n}" for tool, n in sorted(diff.real_runs.items()))
    if real:
        lines.append(f"- Tools run for real during the replay: {real}")
    lines += ["", "| | record | replay |", "|---|---|---|",
              f"| final answer | {_cell(diff.before.final_answer)} | {_cell(diff.after.final_answer)} |",
              *_usage_rows(diff.usage_before, diff.usage_after), ""]
    if diff.answer_diff:
        lines += ["```diff", *diff.answer_diff, "```", ""]
    return lines


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "(none)"


def report_markdown(diffs: list[ConversationDiff], total: Totals, crossed: list[str], candidate: str) -> str:
    lines = [f"# Replay of {total.conversations} conversation(s) against {candidate}", "",
             *totals_markdown(total, crossed)]
    for diff in diffs:
        if diff.changed:
            lines += conversation_markdown(diff)
    same = [f"{d.workflow_id} ({d.team})" for d in diffs if not d.changed]
    if same:
        lines += ["## Unchanged", "", f"{len(same)} conversation(s) replayed with the same routing, tool calls, "
                  "approvals and final answer: " + ", ".join(same) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"
