"""A conversation's `Record` read from its history events (pure: no server, no workflow code).

Temporal records everything a conversation did: its input (the team, the first task), each
turn (the `submit_turn` update or `post_message` signal), each model call and tool run
(activities: their input when scheduled, their result when completed; local ones as markers),
each question asked (the `pending_questions` memo the workflow keeps) and each answer (the
`answer` update or `human_reply` signal). Reading the events, not replaying the workflow, reads
a history another release recorded just as well. Payloads must be readable JSON: a history
encrypted at rest is decoded first (replay_sources.py).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from durable_teams.replay.records import Asked, ModelCall, Record, ToolRun, TurnRecord

PENDING_MEMO = "pending_questions"  # workflows/human.py keeps the questions waiting there
TOOL_ACTIVITIES = ("run_tool", "run_local_tool")
ENDS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "cancelled",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed out",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "continued",
}


class UnreadableHistory(ValueError):
    """A history whose payloads this process cannot read (encrypted under a key it lacks, or
    not a conversation's history at all)."""


def values(payloads: Sequence[Payload]) -> list[Any]:
    """The JSON values of `payloads` (None for a null payload)."""
    found: list[Any] = []
    for payload in payloads:
        encoding = payload.metadata.get("encoding", b"").decode()
        if encoding == "binary/null":
            found.append(None)
        elif encoding == "json/plain":
            found.append(json.loads(payload.data))
        else:
            raise UnreadableHistory(f"a payload is encoded as {encoding or 'nothing'!r}, not JSON "
                                    "(an encrypted history needs its key: DURABLE_TEAMS_ENCRYPTION_KEY)")
    return found


def first(payloads: Sequence[Payload]) -> Any:
    found = values(payloads)
    return found[0] if found else None


def _seconds(event: HistoryEvent) -> float:
    return event.event_time.ToDatetime().timestamp()


def child_ids(runs: Sequence[WorkflowHistory]) -> list[str]:
    """The workflow ids of the child workflows (nested teams, agents run as children) `runs` started."""
    return [e.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
            for history in runs for e in history.events
            if e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED]


class _Reader:
    """Walks the events of a conversation's runs, oldest first, building its `Record`."""

    def __init__(self, workflow_id: str, children: Mapping[str, Record]) -> None:
        self.record = Record(workflow_id, team="", spec=None, task=None, single_turn=True)
        self.children = children
        self.scheduled: dict[int, tuple[str, Any, float]] = {}
        self.questions: dict[str, tuple[Asked, float]] = {}
        self.turn_times: dict[int, list[float]] = {}
        """Turn number -> [start, last step]."""
        self.local_calls: list[tuple[str, str, str]] = []
        """Calls of local tools the models asked for, not yet run: (tool, arguments, agent)."""

    @property
    def turn(self) -> int:
        return self.record.turns[-1].number if self.record.turns else 0

    def start_turn(self, text: str, at: float) -> None:
        self.record.turns.append(TurnRecord(self.turn + 1, text))
        self.turn_times[self.turn] = [at, at]

    def stepped(self, at: float) -> None:
        if self.turn in self.turn_times:
            self.turn_times[self.turn][1] = at

    def started(self, event: HistoryEvent, first_run: bool) -> None:
        if not first_run:
            return
        inp = first(event.workflow_execution_started_event_attributes.input.payloads) or {}
        rec = self.record
        rec.spec = inp.get("team")
        rec.team = (rec.spec or {}).get("name") or inp.get("team_name") or ""
        rec.task, rec.single_turn = inp.get("task"), bool(inp.get("single_turn", True))
        rec.context = dict(inp.get("context") or {})
        state = inp.get("state")
        if state:
            rec.notes.append("the history starts from another run's state (a continued run or a fork): "
                             "turns before it are not in it")
            for _ in range(int(state.get("turns_started") or 0)):
                rec.turns.append(TurnRecord(self.turn + 1, "(before this history)"))
        if rec.task:
            self.start_turn(rec.task, _seconds(event))

    def completed(self, event: HistoryEvent) -> None:
        attrs = event.activity_task_completed_event_attributes
        name, request, at = self.scheduled.get(attrs.scheduled_event_id, ("", None, 0.0))
        result = first(attrs.result.payloads)
        took = max(_seconds(event) - at, 0.0)
        if name == "call_model":
            self.model_reply(request or {}, result or {}, took)
        elif name in TOOL_ACTIVITIES:
            req = request or {}
            self.tool_ran(req.get("tool", "?"), req.get("arguments", "{}"), req.get("agent", ""),
                          result or {}, took)
        elif name == "resolve_team" and isinstance(result, dict) and self.record.spec is None:
            self.record.spec = result
            self.record.team = result.get("name") or self.record.team
        self.stepped(_seconds(event))

    def activity_failed(self, event: HistoryEvent, failure: Any) -> None:
        name, request, at = self.scheduled.get(failure.scheduled_event_id, ("", None, 0.0))
        if name == "call_model":  # its retries are spent: the turn failed (or went on without it)
            agent = (request or {}).get("agent", "?")
            self.record.notes.append(f"model call of {agent} failed: {failure.failure.message}".splitlines()[0])
        elif name in TOOL_ACTIVITIES:
            req = request or {}
            self.tool_ran(req.get("tool", "?"), req.get("arguments", "{}"), req.get("agent", ""),
                          {"content": f"(failed: {failure.failure.message})", "is_error": True},
                          max(_seconds(event) - at, 0.0))
            self.stepped(_seconds(event))

    def model_reply(self, request: dict[str, Any], response: dict[str, Any], took: float) -> None:
        message = response.get("message") or {}
        usage = response.get("usage") or {}
        agent = request.get("agent") or message.get("name") or "?"
        calls = [(c.get("name", "?"), c.get("arguments") or "{}") for c in message.get("tool_calls") or []]
        content = message.get("content") or ""
        self.record.steps.append(ModelCall(
            agent, request.get("model", ""), content, calls, self.turn,
            int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), took))
        local = {n for n, t in ((self.record.spec or {}).get("tools") or {}).items() if t.get("local")}
        self.local_calls += [(name, args, agent) for name, args in calls if name in local]
        if content and not calls and self.record.turns:
            self.record.turns[-1].answer, self.record.turns[-1].agent = content, agent

    def tool_ran(self, tool: str, arguments: str, agent: str, result: dict[str, Any], took: float) -> None:
        if (tool, arguments, agent) in self.local_calls:  # a local tool run by name: not run again
            self.local_calls.remove((tool, arguments, agent))
        self.record.steps.append(ToolRun(tool, arguments, str(result.get("content", "")), agent, self.turn,
                                         bool(result.get("is_error")), took,
                                         context_updates=dict(result.get("context_updates") or {}),
                                         handoff_to=result.get("handoff_to")))

    def marker(self, event: HistoryEvent) -> None:
        attrs = event.marker_recorded_event_attributes
        if attrs.marker_name != "core_local_activity" or "data" not in attrs.details:
            return
        data = json.loads(attrs.details["data"].payloads[0].data)
        result = first(attrs.details["result"].payloads) if "result" in attrs.details else None
        kind = data.get("activity_type")
        if kind == "call_model" and isinstance(result, dict):
            self.model_reply({}, result, 0.0)
        elif kind == "run_local_tool" and isinstance(result, dict):
            tool, arguments, agent = self.local_calls.pop(0) if self.local_calls else ("?", "{}", "")
            self.tool_ran(tool, arguments, agent, result, 0.0)
        self.stepped(_seconds(event))

    def memo(self, event: HistoryEvent) -> None:
        fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
        if PENDING_MEMO not in fields:
            return
        for q in first([fields[PENDING_MEMO]]) or []:
            if q.get("question_id") in self.questions:
                continue
            asked = Asked(q["question_id"], "approval" if q.get("kind") == "approval" else "question",
                          q.get("agent", ""), q.get("text", ""), self.turn, q.get("tool"), q.get("arguments"))
            self.questions[asked.question_id] = (asked, _seconds(event))
            self.record.steps.append(asked)

    def answered(self, reply: Any, event: HistoryEvent) -> None:
        if not isinstance(reply, dict) or "question_id" not in reply:
            return
        qid = str(reply["question_id"])
        if qid not in self.questions:  # a history from before questions were kept in the memo
            kind = "approval" if reply.get("approved") is not None else "question"
            asked = Asked(qid, kind, "", "", self.turn)  # type: ignore[arg-type]
            self.questions[qid] = (asked, _seconds(event))
            self.record.steps.append(asked)
        asked, at = self.questions[qid]
        if asked.answer is None and asked.approved is None:
            asked.answer, asked.approved = str(reply.get("text") or ""), reply.get("approved")
            asked.seconds_waited = max(_seconds(event) - at, 0.0)

    def child(self, event: HistoryEvent) -> None:
        """A nested team's steps, where its child workflow started, in the current turn."""
        child_id = event.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
        child = self.children.get(child_id)
        if child is None:
            self.record.notes.append(f"the steps of the child workflow {child_id} (a nested team) are not "
                                     "in this history: replay by workflow id to read them")
            return
        for step in child.steps:
            self.record.steps.append(dataclasses.replace(step, turn=self.turn))

    def ended(self, event: HistoryEvent, status: str) -> None:
        self.record.status = status
        if status == "completed":
            result = first(event.workflow_execution_completed_event_attributes.result.payloads)
            if isinstance(result, dict) and self.record.turns and result.get("answer") is not None:
                self.record.turns[-1].answer = str(result["answer"])
                self.record.turns[-1].agent = str(result.get("agent") or self.record.turns[-1].agent)

    def finish(self) -> Record:
        for turn in self.record.turns:
            start, last = self.turn_times.get(turn.number, (0.0, 0.0))
            waited = sum(a.seconds_waited for a, _ in self.questions.values() if a.turn == turn.number)
            turn.seconds = max(last - start - waited, 0.0)
        return self.record


def read_event(reader: _Reader, event: HistoryEvent, first_run: bool) -> None:
    kind = event.event_type
    if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        reader.started(event, first_run)
    elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        attrs = event.activity_task_scheduled_event_attributes
        reader.scheduled[event.event_id] = (attrs.activity_type.name, first(attrs.input.payloads), _seconds(event))
    elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        reader.completed(event)
    elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
        reader.activity_failed(event, event.activity_task_failed_event_attributes)
    elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        reader.activity_failed(event, event.activity_task_timed_out_event_attributes)
    elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
        reader.marker(event)
    elif kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
        reader.memo(event)
    elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
        if request.name == "submit_turn":
            turn = first(request.args.payloads)
            reader.start_turn(str((turn or {}).get("text", "")), _seconds(event))
        elif request.name == "answer":
            reader.answered(first(request.args.payloads), event)
    elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        signal = event.workflow_execution_signaled_event_attributes
        if signal.signal_name == "post_message":
            reader.start_turn(str((first(signal.input.payloads) or {}).get("text", "")), _seconds(event))
        elif signal.signal_name == "human_reply":
            reader.answered(first(signal.input.payloads), event)
    elif kind == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
        reader.child(event)
    elif kind in ENDS:
        reader.ended(event, ENDS[kind])


def record_of(runs: Sequence[WorkflowHistory], workflow_id: str | None = None,
              children: Mapping[str, Record] | None = None) -> Record:
    """The record of a conversation whose run histories (oldest first) are `runs`; `children`
    (child workflow id -> its record) adds the steps of its nested teams."""
    if not runs or not runs[0].events:
        raise UnreadableHistory("an empty history")
    start = runs[0].events[0]
    if start.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED or \
            start.workflow_execution_started_event_attributes.workflow_type.name != "TeamWorkflow":
        raise UnreadableHistory(f"{runs[0].workflow_id}: not a conversation's history (no TeamWorkflow start)")
    reader = _Reader(workflow_id or runs[0].workflow_id, children or {})
    for n, history in enumerate(runs):
        for event in history.events:
            read_event(reader, event, n == 0)
    return reader.finish()
