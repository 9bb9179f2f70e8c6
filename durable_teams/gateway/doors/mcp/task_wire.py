"""An MCP task's wire forms, pure: its params, its errors, and a task as read now
(`TaskView`) in both forms of the protocol (durable_teams/gateway/doors/mcp/tasks.py says
which), from a turn's state in the team's words (workflows/turn_states.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from durable_teams.client.server_state import memo_questions
from durable_teams.gateway.doors.mcp.forms import elicit_form, text_result
from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import TurnState, question_text

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATES = {"working": "working", "queued": "working", "waiting": "input_required",
          "completed": "completed", "failed": "completed", "cancelled": "cancelled"}
"""A turn's state (workflows/turn_states.py) as an MCP task's (a failed turn is a tool result with `isError`)."""


class UpdateTaskParams(types.RequestParams):
    """`tasks/update`: the person's answers, keyed as the task's `inputRequests` were."""

    task_id: str
    input_responses: dict[str, Any] = {}


class TaskResultParams(types.GetTaskPayloadRequestParams):
    """`tasks/result`, optionally carrying the answers to the `input_required` it returned."""

    input_responses: dict[str, Any] | None = None


def no_task(value: str) -> MCPError:
    """Unknown, malformed and another scope's task ids get this one error."""
    return MCPError(types.INVALID_PARAMS, f"no task {value[:80]!r}")


def declares_tasks(params: Mapping[str, Any] | None) -> bool:
    """Whether a request declares the tasks extension in its capabilities (2026-07-28: in
    `_meta`, per request)."""
    meta = (params or {}).get("_meta")
    caps = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    extensions = caps.get("extensions") if isinstance(caps, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def missing_capability() -> MCPError:
    return MCPError(types.MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


@dataclass(frozen=True)
class TaskView:
    """A task as read now: its MCP status and what goes with it (pure: shaped for either form)."""

    task_id: str
    thread: str
    status: str
    message: str
    created: datetime
    updated: datetime
    question: Question | None = None
    poll_ms: int = 1000
    failed_turn: bool = False
    """The turn ended failed (a completed task whose result has `isError`)."""
    named: str = ""
    """The thread as the caller names it (its tenant's own id: core/tenant_ids.py); "": `thread`."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def _base(self) -> dict[str, Any]:
        return {"taskId": self.task_id, "status": self.status, "statusMessage": self.message,
                "createdAt": self.created.isoformat(), "lastUpdatedAt": self.updated.isoformat()}

    def result(self) -> dict[str, Any]:
        """The tool's result once the task has ended (what the call would have returned)."""
        status = "failed" if self.failed_turn else self.status
        dumped = text_result(self.message, self.named or self.thread, status, self.status != "completed" or self.failed_turn)
        return dumped.model_dump(by_alias=True, mode="json", exclude_none=True)

    def modern(self, detailed: bool = True) -> dict[str, Any]:
        """The 2026-07-28 `Task` (`detailed`: with its result or its input requests inlined)."""
        task = self._base() | {"ttlMs": None, "pollIntervalMs": self.poll_ms}
        if detailed and self.question is not None:
            task["inputRequests"] = {self.question.question_id: elicit_form(self.question).model_dump(
                by_alias=True, mode="json", exclude_none=True)}
        if detailed and self.status == "completed":
            task["result"] = self.result()
        if detailed and self.status == "failed":
            task["error"] = {"code": types.INTERNAL_ERROR, "message": self.message}
        return task

    def legacy(self) -> dict[str, Any]:
        """The 2025-11-25 `Task` (a failed turn is a failed task there)."""
        status = "failed" if self.failed_turn else self.status
        return self._base() | {"status": status, "ttl": None, "pollInterval": self.poll_ms}


def view_of(task: str, thread: str, found: TurnState, question: Question | None,
            created: datetime, updated: datetime, poll_ms: int, named: str = "") -> TaskView:
    status = STATES.get(found.state, "failed")
    if status == "input_required" and question is None:
        status = "working"  # answered meanwhile
    return TaskView(task, thread, status, found.text, created, updated,
                    question if status == "input_required" else None, poll_ms, found.state == "failed", named)


def from_memo(memo: Mapping[str, Any]) -> tuple[TurnState, Question | None]:
    """A running thread's latest task as its memo tells it, while no worker answers: waiting
    for its open question, else working."""
    questions = memo_questions(memo) or []
    if questions:
        return TurnState("waiting", question_text(questions[0])), questions[0]
    return TurnState("working", "no worker has answered for this conversation lately"), None


def with_related(result: dict[str, Any], task: str) -> dict[str, Any]:
    """A result marked as the outcome of `task` (2025-11-25's related-task `_meta`)."""
    return result | {"_meta": {RELATED_TASK: {"taskId": task}}}


def waiting(view: TaskView) -> dict[str, Any]:
    """`tasks/result` of a task waiting for a person: an `input_required` result whose
    `requestState` is the task (a repeated `tasks/result` with `inputResponses` answers it)."""
    assert view.question is not None
    form = elicit_form(view.question)
    return types.InputRequiredResult(input_requests={view.question.question_id: form},
                                     request_state=view.task_id).model_dump(by_alias=True, mode="json",
                                                                            exclude_none=True)
