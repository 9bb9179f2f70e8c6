"""The LangGraph Server API's objects, made from a thread's state: messages in LangChain's dict
shape, threads, runs, interrupts and the thread state; and what a run request asks for, read
strictly (a parameter this door does not serve is a `Unsupported` naming it, never ignored).
Pure: no Temporal calls.

A run is one turn of the thread (`t<n>`), or the part of it that an answer resumed
(`t<n>.<question id>`): its id says which, so nothing is kept in the gateway."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any, NamedTuple

from starlette.exceptions import HTTPException

from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, TurnReply
from durable_teams.workflows.turn_states import turn_state

RUN_ID = re.compile(r"t([1-9][0-9]{0,8})(?:\.(q[1-9][0-9]{0,8}))?")
"""A run id in its one spelling (no leading zeros): an id names one run or none."""
STREAM_MODES = ("values", "updates", "messages", "messages-tuple", "events", "custom", "debug")
RUN_STATUS = {"completed": "success", "failed": "error", "cancelled": "interrupted",
              "waiting": "interrupted", "working": "running", "queued": "pending"}
"""A turn's state (durable_teams/workflows/turn_states.py) as a LangGraph run status."""
RUN_STATES = ("pending", "running", "error", "success", "timeout", "interrupted")
"""The statuses a LangGraph run may have (a filter of `runs.list`)."""


class Unsupported(HTTPException):
    """A parameter (422) or an endpoint (501, `endpoint=True`) of the LangGraph Server API
    this door does not serve, named, so a client never gets a silent default instead."""

    kind = "unsupported"

    def __init__(self, what: str, endpoint: bool = False) -> None:
        super().__init__(501 if endpoint else 422, f"not supported by durable-teams' LangGraph door: {what}")


class NotFound(HTTPException):
    kind = "not_found"

    def __init__(self, what: str) -> None:
        super().__init__(404, what)


class RunRef(NamedTuple):
    """A run: the turn it belongs to, and the question whose answer started it (None: the turn's start)."""

    turn: int
    resumed: str | None = None

    @property
    def id(self) -> str:
        return f"t{self.turn}" + (f".{self.resumed}" if self.resumed else "")


def parse_run_id(run_id: str) -> RunRef:
    found = RUN_ID.fullmatch(run_id)
    if not found:
        raise NotFound(f"no run {run_id[:80]!r} (a run id here is t<turn>, or t<turn>.<question>)")
    return RunRef(int(found.group(1)), found.group(2))


def message_id(message: Message, index: int) -> str:
    """A message's id: its place and content (a copy of the thread keeps its messages' ids)."""
    calls = ",".join(c.id for c in message.tool_calls)
    said = f"{index}\0{message.role}\0{message.name}\0{message.content}\0{calls}\0{message.tool_call_id}"
    return "m" + hashlib.sha256(said.encode()).hexdigest()[:24]


def lc_message(message: Message, index: int) -> dict[str, Any]:
    """A transcript message as LangChain's message dict (`messages_to_dict`'s data)."""
    base: dict[str, Any] = {"content": message.content or "", "additional_kwargs": {}, "response_metadata": {},
                            "name": message.name, "id": message_id(message, index)}
    if message.role == "user":
        return base | {"type": "human"}
    if message.role == "system":
        return base | {"type": "system"}
    if message.role == "tool":
        return base | {"type": "tool", "tool_call_id": message.tool_call_id or "",
                       "status": "error" if message.kind == "error" else "success"}
    calls = [{"name": c.name, "args": _arguments(c.arguments), "id": c.id, "type": "tool_call"}
             for c in message.tool_calls]
    usage = None
    if message.usage is not None:
        usage = {"input_tokens": message.usage.prompt_tokens, "output_tokens": message.usage.completion_tokens,
                 "total_tokens": message.usage.prompt_tokens + message.usage.completion_tokens}
    return base | {"type": "ai", "tool_calls": calls, "invalid_tool_calls": [], "usage_metadata": usage}


def _arguments(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"__raw__": raw}
    return parsed if isinstance(parsed, dict) else {"__raw__": raw}


def values_of(messages: list[Message]) -> dict[str, Any]:
    """The thread's state values: its shared conversation as `messages`."""
    return {"messages": [lc_message(m, i) for i, m in enumerate(messages)]}


def debug_events(thread: str, step: int, values: dict[str, Any], node: str | None,
                 wire: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The `debug` stream mode's events for one message, in LangGraph's shapes: the step that
    wrote it (`task`, `task_result`: its node, the message as its `messages` write; none for the
    run's input) and the `checkpoint` after it, with the values. A step's time is in the thread's
    history, not here: `timestamp` is null."""
    events: list[dict[str, Any]] = []
    if node is not None and wire is not None:
        task = {"id": wire["id"], "name": node}
        events += [{"type": "task", "timestamp": None, "step": step,
                    "payload": task | {"input": None, "triggers": [f"branch:to:{node}"]}},
                   {"type": "task_result", "timestamp": None, "step": step,
                    "payload": task | {"error": None, "result": [["messages", [wire]]], "interrupts": []}}]
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": None}}
    events.append({"type": "checkpoint", "timestamp": None, "step": step, "payload": {
        "config": config, "parent_config": None, "values": values,
        "metadata": {"source": "input" if node is None else "loop", "step": step}, "next": [], "tasks": []}})
    return events


def interrupt_of(question: Question) -> dict[str, Any]:
    """A question as LangGraph's `Interrupt`: an approval in the shape of LangChain's
    human-in-the-loop middleware (`action_requests`, `review_configs`), `ask_human` as its
    question, agent and options."""
    if question.kind == "approval":
        value: dict[str, Any] = {
            "action_requests": [{"name": question.tool or question.agent,
                                 "args": _arguments(question.arguments or "{}"),
                                 "description": question.text}],
            "review_configs": [{"action_name": question.tool or question.agent,
                                "allowed_decisions": ["approve", "reject"]}],
            "agent": question.agent}
    else:
        value = {"question": question.text, "agent": question.agent, "options": list(question.suggestions)}
    return {"value": value, "id": question.question_id}


def node_breakpoint(question: Question) -> bool:
    """A pause before or after an agent's run: LangGraph's static breakpoint (`interrupt_before`,
    `interrupt_after` on a node), which it shows with no `Interrupt` of its own, in `next` and
    `tasks` (a breakpoint at a tool call is an approval, shown as one)."""
    return question.breakpoint and question.tool is None


def interrupts_of(pending: list[Question]) -> list[dict[str, Any]]:
    """The thread's interrupts as LangGraph lists them: its questions but the node breakpoints."""
    return [interrupt_of(q) for q in pending if not node_breakpoint(q)]


def next_of(pending: list[Question]) -> list[str]:
    """LangGraph's `next`: the agents that run when the thread is resumed (after an agent's run,
    what comes next is routed then: not named)."""
    return list(dict.fromkeys(q.agent for q in pending if not (node_breakpoint(q) and q.after)))


def tasks_of(pending: list[Question]) -> list[dict[str, Any]]:
    """LangGraph's `tasks`: each agent that waits, with its interrupts (none at a breakpoint)."""
    return [{"id": q.question_id, "name": q.agent, "path": [], "error": None,
             "interrupts": [] if node_breakpoint(q) else [interrupt_of(q)],
             "checkpoint": None, "state": None, "result": None}
            for q in pending if not (node_breakpoint(q) and q.after)]


def run_status(status: ConversationStatus, turn: int, reply: TurnReply | None, running: bool) -> str:
    return RUN_STATUS[turn_state(status, turn, reply, running).state]


def thread_status(status: ConversationStatus, running: bool, failed: bool) -> str:
    """idle, busy, interrupted or error, as LangGraph names a thread's state."""
    if failed:
        return "error"
    if not running:
        return "idle"
    if status.pending:
        return "interrupted"
    last = status.last_reply.turn if status.last_reply else 0
    return "busy" if status.queued_turns or status.turns > last else "idle"


def thread_object(thread: str, team: str | None, created: datetime | None, metadata: dict[str, Any],
                  state: str, values: dict[str, Any], pending: list[Question]) -> dict[str, Any]:
    at = (created or datetime.fromtimestamp(0)).isoformat()
    return {"thread_id": thread, "created_at": at, "updated_at": at, "state_updated_at": at,
            "metadata": {"graph_id": team, "assistant_id": team, **metadata}, "status": state,
            "values": values, "interrupts": {q.question_id: [interrupt_of(q)] for q in pending
                                             if not node_breakpoint(q)},
            "config": {}, "error": None}


def run_object(thread: str, run: RunRef, team: str | None, state: str, created: datetime | None,
               metadata: dict[str, Any] | None = None, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    at = (created or datetime.fromtimestamp(0)).isoformat()
    return {"run_id": run.id, "thread_id": thread, "assistant_id": team, "created_at": at, "updated_at": at,
            "status": state, "metadata": metadata or {}, "multitask_strategy": "reject", "kwargs": kwargs or {}}


def assistant_object(team: str) -> dict[str, Any]:
    """A team as an assistant: its id and its graph are its name."""
    at = datetime.fromtimestamp(0).isoformat()
    return {"assistant_id": team, "graph_id": team, "name": team, "description": None, "config": {},
            "context": {}, "metadata": {"created_by": "durable-teams"}, "version": 1,
            "created_at": at, "updated_at": at}
