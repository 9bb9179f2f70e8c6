"""A Responses API response as a function of durable state (pure: no Temporal, no HTTP).

A response is one stretch of a thread's log: from where its input went in (`ResponseRef`,
encoded in its id) to where the team stopped: the turn's reply, or a question to a person (an
`ask_human` call, a tool call waiting for approval, or one at a breakpoint before or after it runs). Everything here is computed from the
log, the turn's reply and the questions waiting, so any gateway process gives the same answer
for the same id, and the event list of a response still running is a prefix of its final one
(`responses_events.events`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from durable_teams.workflows.builtins import ASK_HUMAN
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.state import Question, TurnReply
from durable_teams.workflows.usage import Tally

PREFIX = "resp_"


class UnknownResponse(LookupError):
    """An id this gateway never gave (404); `param`: the request's field that named it."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ResponseRef:
    """Where a response lives: its thread, turn, the log index its input went in at, and
    `step`: 0 for the response that opened the turn, k for the k-th answer within it."""

    thread: str
    turn: int
    start: int
    step: int = 0

    @property
    def id(self) -> str:
        return f"{PREFIX}{self.thread.encode().hex()}_{self.turn}_{self.start}_{self.step}"

    @property
    def key(self) -> str:
        """The response within its thread (the step `DELETE` hides: workflows/hidden_steps.py)."""
        return f"{self.turn}_{self.start}_{self.step}"

    @classmethod
    def parse(cls, value: object) -> ResponseRef:
        """The ref an id stands for, or `UnknownResponse`. Only the id this ref gives is taken
        (`ref.id == value`): no leading zeros, no other digits than ASCII ones, lower-case hex,
        so one response answers to one id."""
        if not isinstance(value, str) or not value.startswith(PREFIX) or len(value) > 600:
            raise UnknownResponse(f"no response {str(value)[:80]!r}")
        parts = value[len(PREFIX):].split("_")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts[1:]):
            raise UnknownResponse(f"no response {value[:80]!r}")
        try:
            ref = cls(bytes.fromhex(parts[0]).decode(), *(int(p) for p in parts[1:]))
        except ValueError:
            raise UnknownResponse(f"no response {value[:80]!r}") from None
        if not ref.thread or ref.id != value:
            raise UnknownResponse(f"no response {value[:80]!r}")
        return ref


@dataclass
class Stop:
    """A question that ended a response: the call that asked it, by whom, at which index."""

    index: int
    agent: str
    call: ToolCall
    approval: bool
    breakpoint: bool = False
    """A tool call that pauses at a breakpoint (before it runs, or after it ran): yes resumes
    it, no stops it (docs/time-travel.md)."""

    @property
    def text(self) -> str:
        if self.breakpoint:
            return (f"[{self.agent}] At a breakpoint at {self.call.name}({self.call.arguments}). "
                    "Resume? Reply yes or no.")
        if self.approval:
            return f"[{self.agent}] Approve {self.call.name}({self.call.arguments})? Reply yes or no."
        try:
            args = json.loads(self.call.arguments or "{}")
            hint = " | ".join(str(s) for s in args.get("suggestions") or [])
            return f"[{self.agent}] {args['question']}" + (f" (options: {hint})" if hint else "")
        except (ValueError, KeyError, TypeError, AttributeError):
            return f"[{self.agent}] {self.call.arguments}"


@dataclass
class View:
    """What a response holds now. `steps`: the team's steps before the end (reasoning items:
    one per tool-calling message); `status`: in_progress, completed, incomplete, failed."""

    ref: ResponseRef
    status: str = "in_progress"
    steps: list[tuple[int, str]] = field(default_factory=list)
    text: str | None = None
    stop: Stop | None = None
    reply: TurnReply | None = None
    end: int | None = None
    """The log index the next response of the thread starts at (once this one ended)."""

    @property
    def ended(self) -> bool:
        return self.status != "in_progress"

    @property
    def usage(self) -> Tally:
        return (self.reply.usage if self.reply else None) or Tally()


def is_turn_start(message: Message) -> bool:
    return message.role == "user" and message.kind == "message" and message.agent_run == 0


def stops_of(message: Message, approval_tools: set[str] | frozenset[str],
             breakpoint_tools: set[str] | frozenset[str] = frozenset()) -> list[ToolCall]:
    """The calls of `message` that wait for a person: a question, an approval, a breakpoint."""
    if message.role != "assistant":
        return []
    return [c for c in message.tool_calls
            if c.name == ASK_HUMAN or c.name in approval_tools or c.name in breakpoint_tools]


def view_of(ref: ResponseRef, messages: list[Message], reply: TurnReply | None,
            pending: list[Question], approval_tools: set[str],
            breakpoint_tools: set[str] | frozenset[str] = frozenset()) -> View:
    """The response `ref` given the log from `ref.start` (as far as it goes), the reply of its
    turn (None while it runs), the questions waiting now, which tools wait for approval and
    which pause at a breakpoint (a call of either ends the response, as an approval request)."""
    view = View(ref)
    seen_start = ref.step > 0  # an answer's response opens on no new turn
    end = ref.start + len(messages)
    for offset, message in enumerate(messages):
        at = ref.start + offset
        if is_turn_start(message):
            if seen_start:  # the next turn: this one ended before it
                end = at
                break
            seen_start = True
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        stops = stops_of(message, approval_tools, breakpoint_tools)
        if not stops:
            calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            said = f"{message.content.strip()} " if message.content and message.content.strip() else ""
            view.steps.append((at, f"{message.name or 'agent'}: {said}-> {calls}"))
            continue
        first = stops[0]  # an approval comes before a breakpoint before the same call
        stop = Stop(at, message.name or "agent", first, first.name != ASK_HUMAN,
                    first.name in breakpoint_tools and first.name not in approval_tools)
        answered = any(m.role == "tool" and m.tool_call_id == stop.call.id for m in messages[offset + 1:])
        waiting = any(q.tool_call_id == stop.call.id for q in pending)
        if waiting or answered or reply is not None:
            view.status, view.stop, view.text, view.end = "completed", stop, stop.text, at + 1
            return view
        return view  # asked, not yet waiting: still in progress
    if reply is not None:
        view.reply, view.text = reply, reply.text
        view.status = {"failed": "failed", "truncated": "incomplete", "filtered": "incomplete",
                       "cancelled": "cancelled"}.get(reply.status, "completed")
        view.end = end
    return view
