"""How a replay differs from its record, per conversation and in total, and the verdict
against `--fail-on` thresholds (pure)."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from durable_teams.replay.records import Asked, Record, ToolRun
from durable_teams.workflows.usage import ModelPrice

FAIL_ON_HELP = ("changed-tool-calls (a tool call added, removed or changed), lost-approval (an approval "
                "the record asked that the replay did not), stopped (a conversation stopped at a question "
                "the record does not answer), changed-routing, cost-increase=N (total cost, or tokens "
                "without a price table, up by more than N %%)")


@dataclass
class ToolChange:
    change: str
    """"added", "removed" or "changed"."""
    tool: str
    before: str | None
    after: str | None


@dataclass
class Usage:
    input_tokens: int
    output_tokens: int
    cost: float | None
    seconds: float


@dataclass
class ConversationDiff:
    workflow_id: str
    team: str
    before: Record
    after: Record
    routing_before: list[str]
    routing_after: list[str]
    tool_changes: list[ToolChange]
    approvals_before: list[str]
    approvals_after: list[str]
    lost_approvals: list[str]
    answer_diff: list[str]
    usage_before: Usage
    usage_after: Usage
    served: dict[str, int]
    stand_ins: list[str]
    real_runs: dict[str, int]
    stopped: str | None = None
    error: str | None = None

    @property
    def routing_changed(self) -> bool:
        return self.routing_before != self.routing_after

    @property
    def answer_changed(self) -> bool:
        return self.before.final_answer.strip() != self.after.final_answer.strip()

    @property
    def changed(self) -> bool:
        """Whether anything the report compares differs (or the replay did not finish)."""
        return bool(self.routing_changed or self.tool_changes or self.lost_approvals or self.answer_changed
                    or self.approvals_before != self.approvals_after or self.stand_ins or self.stopped
                    or self.error)


def approval_name(asked: Asked) -> str:
    """An approval as the report names it: the tool call, or a breakpoint's own words."""
    return asked.text if asked.tool is None else f"{asked.tool}({asked.arguments})"


def _approvals(record: Record) -> list[str]:
    return [approval_name(a) for a in record.asked if a.question == "approval"]


def tool_changes(before: list[ToolRun], after: list[ToolRun]) -> list[ToolChange]:
    """Calls only one side made, by tool and arguments; a removed and an added call of one
    tool pair up as a changed call."""
    spare = Counter(r.key for r in after)
    removed = []
    for run in before:
        if spare[run.key]:
            spare[run.key] -= 1
        else:
            removed.append(run)
    spare_before = Counter(r.key for r in before)
    added = []
    for run in after:
        if spare_before[run.key]:
            spare_before[run.key] -= 1
        else:
            added.append(run)
    changes = []
    for run in removed:
        pair = next((a for a in added if a.tool == run.tool), None)
        if pair is not None:
            added.remove(pair)
            changes.append(ToolChange("changed", run.tool, run.arguments, pair.arguments))
        else:
            changes.append(ToolChange("removed", run.tool, run.arguments, None))
    return changes + [ToolChange("added", a.tool, None, a.arguments) for a in added]


def cost_of(record: Record, prices: dict[str, ModelPrice]) -> float | None:
    if not prices:
        return None
    total = 0.0
    for call in record.model_calls:
        price = prices.get(call.model)
        if price is None:
            return None
        total += (call.input_tokens * price.input_per_million + call.output_tokens * price.output_per_million) / 1e6
    return total


def usage_of(record: Record, prices: dict[str, ModelPrice]) -> Usage:
    tokens_in, tokens_out = record.tokens
    return Usage(tokens_in, tokens_out, cost_of(record, prices), record.seconds)


def answer_diff(before: str, after: str) -> list[str]:
    """A line diff of the final answers (`-` the record's, `+` the replay's), empty if the same."""
    if before.strip() == after.strip():
        return []
    return [line for line in difflib.ndiff(before.splitlines() or [""], after.splitlines() or [""])
            if not line.startswith("?")]


def compare(before: Record, after: Record, prices: dict[str, ModelPrice] | None = None,
            real_runs: dict[str, int] | None = None) -> ConversationDiff:
    prices = prices or {}
    approvals_after = Counter(a.tool for a in after.asked if a.question == "approval")
    lost = []
    for asked in before.asked:
        if asked.question == "approval":
            if approvals_after[asked.tool]:
                approvals_after[asked.tool] -= 1
            else:
                lost.append(approval_name(asked))
    served = Counter(str(r.served) for r in after.tool_runs)
    stand_ins = [f"{r.tool}({r.arguments})" for r in after.tool_runs if r.served == "stand-in"]
    stopped = next((n for n in after.notes if n.startswith("stopped")), None) if after.status == "stopped" else None
    return ConversationDiff(
        before.workflow_id, before.team, before, after, before.agents_visited, after.agents_visited,
        tool_changes(before.tool_runs, after.tool_runs), _approvals(before), _approvals(after), lost,
        answer_diff(before.final_answer, after.final_answer), usage_of(before, prices), usage_of(after, prices),
        dict(served), stand_ins, dict(real_runs or {}), stopped)


@dataclass
class Totals:
    conversations: int = 0
    routing_changed: int = 0
    tool_calls_changed: int = 0
    lost_approvals: int = 0
    approvals_before: int = 0
    approvals_after: int = 0
    answers_changed: int = 0
    stopped: int = 0
    failed: int = 0
    stand_ins: int = 0
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)


def _sum_usage(usages: list[Usage]) -> dict[str, Any]:
    costs = [u.cost for u in usages]
    return {"input_tokens": sum(u.input_tokens for u in usages), "output_tokens": sum(u.output_tokens for u in usages),
            "cost": None if not costs or None in costs else sum(c or 0.0 for c in costs),
            "seconds": round(sum(u.seconds for u in usages), 3)}


def totals(diffs: list[ConversationDiff]) -> Totals:
    return Totals(
        len(diffs), sum(d.routing_changed for d in diffs), sum(len(d.tool_changes) for d in diffs),
        sum(len(d.lost_approvals) for d in diffs), sum(len(d.approvals_before) for d in diffs),
        sum(len(d.approvals_after) for d in diffs), sum(d.answer_changed for d in diffs),
        sum(d.stopped is not None for d in diffs), sum(d.error is not None for d in diffs),
        sum(len(d.stand_ins) for d in diffs),
        _sum_usage([d.usage_before for d in diffs]), _sum_usage([d.usage_after for d in diffs]))


def parse_fail_on(items: list[str]) -> dict[str, float | None]:
    """`--fail-on` values (comma-separated or repeated) as rule -> threshold; ValueError if unknown."""
    rules: dict[str, float | None] = {}
    for item in (part.strip() for value in items for part in value.split(",")):
        if not item:
            continue
        name, _, number = item.partition("=")
        if name == "cost-increase":
            try:
                rules[name] = float(number.rstrip("%"))
            except ValueError:
                raise ValueError(f"--fail-on cost-increase=N needs a percentage, not {number!r}") from None
        elif name in ("changed-tool-calls", "lost-approval", "stopped", "changed-routing") and not number:
            rules[name] = None
        else:
            raise ValueError(f"--fail-on {item!r}: known rules are {FAIL_ON_HELP.replace('%%', '%')}")
    return rules


def cost_increase(total: Totals) -> float:
    """The total cost's increase in percent (tokens when a cost is unknown); 0 when both are 0."""
    before, after = total.before.get("cost"), total.after.get("cost")
    if before is None or after is None:
        before = total.before["input_tokens"] + total.before["output_tokens"]
        after = total.after["input_tokens"] + total.after["output_tokens"]
    if before == 0:
        return 0.0 if after == 0 else float("inf")
    return (after - before) * 100.0 / before


def verdict(total: Totals, rules: dict[str, float | None]) -> list[str]:
    """The thresholds crossed, one line each (none: the replay passes). A conversation that
    could not be replayed always fails it."""
    crossed = [f"failed: {total.failed} conversation(s) could not be replayed (the report says why)"] \
        if total.failed else []
    if "changed-tool-calls" in rules and total.tool_calls_changed:
        crossed.append(f"changed-tool-calls: {total.tool_calls_changed} tool call(s) added, removed or changed")
    if "lost-approval" in rules and total.lost_approvals:
        crossed.append(f"lost-approval: {total.lost_approvals} approval(s) the record asked were not asked")
    if "stopped" in rules and total.stopped:
        crossed.append(f"stopped: {total.stopped} conversation(s) stopped at a question the record does not answer")
    if "changed-routing" in rules and total.routing_changed:
        crossed.append(f"changed-routing: {total.routing_changed} conversation(s) routed differently")
    limit = rules.get("cost-increase")
    increase = cost_increase(total)
    if "cost-increase" in rules and limit is not None and increase > limit:
        up = f"up {increase:.1f} %" if increase != float("inf") else "up from nothing"
        crossed.append(f"cost-increase: {up} (limit {limit:g} %)")
    return crossed
