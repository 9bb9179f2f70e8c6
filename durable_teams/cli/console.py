"""How conversations look at a terminal: one line per message, event or question."""

from __future__ import annotations

from collections.abc import Callable

from durable_teams.client.events import Event
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, RefusedSignal, TurnStatus

FLAGGED_EXIT = 3
"""`durable-teams run`'s exit code for an answer the model gave but that was cut off or filtered."""
FLAG_WARNINGS = {
    "truncated": "warning: the answer above was cut off: the model hit its token limit (status truncated)",
    "filtered": "warning: the answer above was stopped by the endpoint's content filter (status filtered)",
}


def run_exit_code(status: TurnStatus) -> int:
    """0 for an answer, FLAGGED_EXIT for a cut-off or filtered one, 1 when the turn failed
    or ran out of budget."""
    return 0 if status == "completed" else FLAGGED_EXIT if status in FLAG_WARNINGS else 1


def format_refused(refused: list[RefusedSignal], count: int) -> list[str]:
    """One line per refused signal (the latest kept), and how many there were in all."""
    lines = [f"refused signal {r.signal!r} at {r.at:%Y-%m-%d %H:%M:%S} UTC: {r.reason}" for r in refused]
    if count > len(refused):
        lines.append(f"({count} signals refused in all; the latest {len(refused)} shown)")
    return lines


def format_message(m: Message) -> str:
    who = m.name if m.role == "assistant" and m.name else m.role
    if m.role == "tool":
        head = f"  [{m.name} result] "
        return head + (m.content or "").replace("\n", "\n" + " " * len(head))
    calls = ", ".join(f"{c.name}({c.arguments if c.arguments not in ('', '{}') else ''})" for c in m.tool_calls)
    text = (m.content or "").strip()
    return f"[{who}] {text}{' -> ' if text and calls else ''}{calls}"


def format_question(workflow_id: str, q: Question) -> str:
    lines = [f"{workflow_id}  {q.question_id}  asked by {q.agent} at {q.asked_at:%Y-%m-%d %H:%M:%S} UTC"]
    if q.kind == "approval":
        edit = ("" if not (q.breakpoint and q.tool) else
                " [--result '...']" if q.after else " [--arguments '{...}']")  # a breakpoint's edit
        lines.append(f"  {'Resume or stop' if q.breakpoint else 'Approval needed'}: {q.step}")
        lines.append(f"  Reply: durable-teams approve {workflow_id} --question {q.question_id}{edit}"
                     f"   (or deny ... --reason '...')")
    else:
        lines.append(f"  Question: {q.text}")
        if q.suggestions:
            lines.append(f"  Suggestions: {' | '.join(q.suggestions)}")
        lines.append(f"  Reply: durable-teams answer {workflow_id} \"<your answer>\" --question {q.question_id}")
    return "\n".join(lines)


def format_event(event: Event) -> str:
    """One event: its type, who, what. A worker's private steps are indented; the lines of a
    multi-line text (a tool's result, say) stay under its first line."""
    if event.type in ("tool_usage", "question"):
        args = "" if event.arguments in (None, "", "{}") else event.arguments
        return f"{event_head(event)}{event.tool}({args}){format_tokens(event)}"
    head = event_head(event)
    return head + event.text.replace("\n", "\n" + " " * len(head)) + format_tokens(event)


def event_head(event: Event, kind: str | None = None) -> str:
    indent = "    " if event.private else ""
    return f"{indent}{kind or event.type:<13} [{event.agent or event.tool or 'user'}] "


def format_tokens(event: Event) -> str:
    if event.usage is None:
        return ""
    return f"  ({event.usage.prompt_tokens:,} in / {event.usage.completion_tokens:,} out tokens)"


class FollowPrinter:
    """Prints `follow`'s events, a model's live text as it comes: the deltas of a call are
    written onto the line its finished message would have, which then only ends that line
    (or, when the text differs, after a retry, is printed whole below it)."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self.write = write
        self.call: str | None = None
        self.agent: str | None = None
        self.text = ""
        self.head = ""

    def show(self, event: Event) -> None:
        if event.type == "ai_message_delta":
            self._delta(event)
        elif event.type == "ai_message" and self.call is not None and event.agent == self.agent \
                and event.text == self.text:
            self.write(format_tokens(event) + "\n")
            self.call = None
        else:
            self._end_line()
            self.write((f"(workflow {event.text.lower()})" if event.type == "done" else format_event(event)) + "\n")

    def _delta(self, event: Event) -> None:
        if event.reset or event.call != self.call:
            self._end_line()
            if event.reset:
                return  # the call is retried: its text starts again on a new line
            self.call, self.agent, self.text = event.call, event.agent, ""
            self.head = event_head(event, "ai_message")
            self.write(self.head)
        self.text += event.text
        self.write(event.text.replace("\n", "\n" + " " * len(self.head)))

    def _end_line(self) -> None:
        if self.call is not None:
            self.write("\n")
            self.call = None
