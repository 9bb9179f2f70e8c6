"""A replay's report as one self-contained HTML page: the totals, then each conversation with
its record and its replay side by side, step by step (pure; no script, no outside resource)."""

from __future__ import annotations

import difflib
import html

from durable_teams.replay.comparison import ConversationDiff, Totals
from durable_teams.replay.records import Asked, ModelCall, Record, ToolRun

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;
vertical-align:top}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}.side>div{border:1px solid #ddd;padding:.5em}
.step{margin:.2em 0;padding:.2em .4em;border-left:3px solid #999;white-space:pre-wrap;word-break:break-word}
.user{border-color:#36c}.model{border-color:#999}.tool{border-color:#2a2}.asked{border-color:#c80}
.stand-in{background:#fee}.recorded{background:#efe}.live{background:#ffd}
.flag{color:#b00;font-weight:bold}ins{background:#cfc;text-decoration:none}del{background:#fcc}
section.conversation{border-top:2px solid #888;margin-top:1.5em}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _step(step: object) -> str:
    if isinstance(step, ModelCall):
        calls = "; ".join(f"{n}({a})" for n, a in step.calls)
        text = step.content + (f"\n→ {calls}" if calls else "")
        return f'<div class="step model"><b>{_e(step.agent)}</b>: {_e(text)}</div>'
    if isinstance(step, ToolRun):
        served = "" if step.served == "run" else f' <i>[{_e(step.served)}]</i>'
        css = "" if step.served == "run" else f" {step.served}"
        return (f'<div class="step tool{css}"><b>{_e(step.tool)}</b>({_e(step.arguments)}){served}'
                f"\n= {_e(step.result[:500])}</div>")
    assert isinstance(step, Asked)
    answer = ("(not answered)" if step.answer is None and step.approved is None
              else f"approved: {step.approved}" if step.question == "approval" else step.answer)
    by = f" <i>[{_e(step.answered_by)}]</i>" if step.answered_by not in ("person", "") else ""
    return (f'<div class="step asked"><b>{_e(step.question)} from {_e(step.agent)}</b>: {_e(step.text)}'
            f"\n⇒ {_e(answer)}{by}</div>")


def transcript(record: Record) -> str:
    parts = []
    steps = list(record.steps)
    for turn in record.turns:
        parts.append(f'<div class="step user"><b>user (turn {turn.number})</b>: {_e(turn.text)}</div>')
        parts += [_step(s) for s in steps if getattr(s, "turn", None) == turn.number]
    parts += [_step(s) for s in steps if getattr(s, "turn", 0) == 0]
    parts += [f'<div class="step flag">{_e(note)}</div>' for note in record.notes]
    return "\n".join(parts)


def word_diff(before: str, after: str) -> str:
    a, b = before.split(), after.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        if op in ("delete", "replace"):
            out.append(f"<del>{_e(' '.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{_e(' '.join(b[j1:j2]))}</ins>")
        if op == "equal":
            out.append(_e(" ".join(a[i1:i2])))
    return " ".join(out)


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _row(name: str, before: object, after: object, flag: bool = False) -> str:
    cls = ' class="flag"' if flag else ""
    return f"<tr><th>{_e(name)}</th><td>{_e(before)}</td><td{cls}>{_e(after)}</td></tr>"


def conversation(diff: ConversationDiff, n: int) -> str:
    b, a = diff.usage_before, diff.usage_after
    rows = [
        _row("agents visited", " → ".join(diff.routing_before), " → ".join(diff.routing_after), diff.routing_changed),
        _row("approvals asked", ", ".join(diff.approvals_before) or "none",
             ", ".join(diff.approvals_after) or "none", bool(diff.lost_approvals)),
        _row("tokens (in / out)", f"{b.input_tokens} / {b.output_tokens}", f"{a.input_tokens} / {a.output_tokens}"),
        _row("cost", _cost(b.cost), _cost(a.cost)),
        _row("latency (s)", f"{b.seconds:.2f}", f"{a.seconds:.2f}"),
        _row("status", diff.before.status, diff.after.status, diff.after.status not in ("completed", "running")),
    ]
    flags = [f'<p class="flag">Lost approval: {_e(x)}</p>' for x in diff.lost_approvals]
    flags += [f'<p class="flag">Stopped: {_e(diff.stopped)}</p>'] if diff.stopped else []
    flags += [f'<p class="flag">Failed: {_e(diff.error)}</p>'] if diff.error else []
    changes = "".join(f"<li>{_e(c.change)}: {_e(c.tool)} {_e(c.before or '')} → {_e(c.after or '')}</li>"
                      for c in diff.tool_changes)
    stand_ins = "".join(f"<li>stand-in (not run): {_e(s)}</li>" for s in diff.stand_ins)
    return (f'<section class="conversation" id="c{n}"><h2>{_e(diff.workflow_id)} ({_e(diff.team)})</h2>'
            f"{''.join(flags)}<table><tr><th></th><th>record</th><th>replay</th></tr>{''.join(rows)}</table>"
            f"<ul>{changes}{stand_ins}</ul>"
            f'<p><b>Final answer</b>: <span class="answer-diff">{word_diff(diff.before.final_answer, diff.after.final_answer)}</span></p>'
            f'<div class="side"><div class="before"><h3>record</h3>{transcript(diff.before)}</div>'
            f'<div class="after"><h3>replay</h3>{transcript(diff.after)}</div></div></section>')


def report_html(diffs: list[ConversationDiff], total: Totals, crossed: list[str], candidate: str) -> str:
    verdict = ("<p class=\"flag\" id=\"verdict\">Failed: " + _e("; ".join(crossed)) + "</p>" if crossed
               else '<p id="verdict">Passed: no threshold crossed.</p>')
    summary = "".join([
        _row("conversations", total.conversations, f"{total.stopped} stopped, {total.failed} failed"),
        _row("routed differently", "", total.routing_changed, bool(total.routing_changed)),
        _row("tool calls added, removed or changed", "", total.tool_calls_changed, bool(total.tool_calls_changed)),
        _row("approvals asked", total.approvals_before, f"{total.approvals_after} ({total.lost_approvals} lost)",
             bool(total.lost_approvals)),
        _row("final answers changed", "", total.answers_changed),
        _row("tokens (in / out)", f"{total.before['input_tokens']} / {total.before['output_tokens']}",
             f"{total.after['input_tokens']} / {total.after['output_tokens']}"),
        _row("cost", _cost(total.before["cost"]), _cost(total.after["cost"])),
        _row("latency (s)", f"{total.before['seconds']:.2f}", f"{total.after['seconds']:.2f}")])
    body = "".join(conversation(d, n) for n, d in enumerate(diffs))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Replay against {_e(candidate)}</title>"
            f"<style>{STYLE}</style></head><body><h1>Replay of {total.conversations} conversation(s) "
            f"against {_e(candidate)}</h1>{verdict}<table id=\"totals\"><tr><th></th><th>record</th>"
            f"<th>replay</th></tr>{summary}</table>{body}</body></html>\n")
