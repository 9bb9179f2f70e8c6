"""Questions for a person, held in workflow state and answered by a signal or an update.

`ask_human` and tool approvals both become a `Question` with a deterministic id (`q1`, `q2`, …,
counted across continue-as-new). The wait is `workflow.wait_condition` with a timeout: it costs
nothing while it waits and survives any worker or server restart, because the question is
workflow state rather than a process's memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import timedelta

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from . import labels
    from .argument_checks import arguments_problem
    from .messages import ToolCall, ToolSpec
    from .state import ConversationState, HumanReply, Question

AWAITING_HUMAN = SearchAttributeKey.for_bool("AwaitingHuman")
PENDING_MEMO = "pending_questions"
"""Memo key holding the pending questions as JSON objects."""


QUESTION_CLOSED = "question-closed"
"""The detail an `answer` rejection carries when the question is no longer open (answered,
or never asked): a client that chose it from what it last saw knows another answer came first."""


def question_closed(state: ConversationState, question_id: str) -> bool:
    return question_id not in state.pending or question_id in state.answers


def reply_problem(state: ConversationState, reply: HumanReply) -> str | None:
    """Why `reply` cannot be accepted, or None. Shared by the update's validator and the
    signal, so both judge an answer the same way."""
    question = state.pending.get(reply.question_id)
    if question is None:
        if reply.question_id in state.answers:
            return f"question {reply.question_id!r} was already answered"
        known = ", ".join(state.pending) or "none"
        return f"no pending question {reply.question_id!r} (pending: {known})"
    if reply.question_id in state.answers:
        return f"question {reply.question_id!r} was already answered"
    if reply.arguments is not None and not (question.breakpoint and question.tool and not question.after):
        return "only a breakpoint before a tool call takes edited arguments"
    if reply.result is not None and not (question.breakpoint and question.tool and question.after):
        return "only a breakpoint after a tool call takes an edited result"
    if reply.arguments is not None and not _json_object(reply.arguments):
        return "the edited arguments must be a JSON object"
    if question.kind == "approval":
        if reply.approved is None:
            return "an approval needs approved=true or approved=false"
    elif not reply.text.strip():
        return "the answer text is empty"
    return None


EDIT_REFUSED = "edit-refused"
"""The detail an `answer` rejection carries when a breakpoint's edited arguments do not fit the
tool's parameters: the person's to fix (the question stays open), a 400, not a conflict."""
EDIT_PATCH = "breakpoint-edits-checked"
"""Edited arguments checked against the tool's schema (`HumanDesk.receive`)."""


def edit_problem(tools: Mapping[str, ToolSpec], state: ConversationState, reply: HumanReply) -> str | None:
    """Why a breakpoint's edited arguments cannot run the tool (a field of the wrong type, a
    required one missing, one it does not take, a parameter the runner fills in), as the
    tool's own validation would say it; None when they fit, or for any other answer."""
    question = state.pending.get(reply.question_id)
    if question is None or reply.arguments is None or question.tool is None or question.tool not in tools:
        return None
    try:
        edited = json.loads(reply.arguments)
    except ValueError:
        return None  # reply_problem says so
    if not isinstance(edited, dict):
        return None
    problem = arguments_problem(tools[question.tool].parameters, edited)
    return None if problem is None else f"the edited arguments do not fit {question.tool}: {problem}"


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def describe_duration(seconds: float) -> str:
    if seconds % 86_400 == 0:
        days = int(seconds // 86_400)
        return f"{days} day" + ("s" if days != 1 else "")
    if seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return f"{hours} hour" + ("s" if hours != 1 else "")
    return f"{seconds:g} seconds"


class Interrupted(Exception):
    """Raised out of a wait for a person when the run should continue as new now: the question
    stays pending in state, and the next run re-attaches to it."""


class HumanDesk:
    """Asks questions and waits for their answers, inside the workflow."""

    def __init__(self, state: ConversationState, timeout_seconds: float, use_search_attribute: bool):
        self.state = state
        self.timeout_seconds = timeout_seconds
        self.use_search_attribute = use_search_attribute
        self.should_interrupt: Callable[[], bool] = lambda: False
        """Set by the workflow: true when the run should continue as new at this wait."""
        self.tool_specs: Callable[[], Mapping[str, ToolSpec]] = dict
        """Set by the workflow: the team's tools, whose schemas a breakpoint's edit must fit."""
        self.on_ask: list[Callable[[Question], None]] = []
        """Who sees each question as it goes up: none in a worker; a replay's reader (time
        travel's, client/fork_state.py) learns the questions answered since. Called with no
        effect on the workflow."""

    @property
    def labels(self) -> frozenset[str] | None:
        """The labels the namespace has (asked once per conversation, workflows/labels.py);
        None: not asked yet."""
        known = self.state.labels
        return None if known is None else frozenset(known)

    @labels.setter
    def labels(self, value: frozenset[str] | None) -> None:
        self.state.labels = None if value is None else sorted(value)

    def receive(self, reply: HumanReply) -> str | None:
        """Record an answer; a stale or unknown one is kept in `ignored_replies` and changes
        nothing. Returns the reason it was ignored, if it was."""
        problem = reply_problem(self.state, reply)
        if problem is None:
            # the update's validator refuses such an edit first; a signal's (updates off) is
            # refused here. Asked only for an edit that does not fit, so a history recorded
            # before the check (the edit taken, the model told "Invalid arguments") replays.
            edit = edit_problem(self.tool_specs(), self.state, reply)
            if edit is not None and workflow.patched(EDIT_PATCH):
                problem = edit
        if problem is not None:
            self.state.ignored_replies.append(reply)
            workflow.logger.warning("Ignored reply to %s: %s", reply.question_id, problem)
            return problem
        self.state.answers[reply.question_id] = reply
        return None

    def _mark(self) -> None:
        waiting = bool(self.state.pending)
        if self.use_search_attribute and AWAITING_HUMAN.name in (self.labels or ()):
            workflow.upsert_search_attributes([AWAITING_HUMAN.value_set(waiting)])
        texts = "; ".join(f"{q.question_id}: {q.text}" for q in self.state.pending.values())
        workflow.set_current_details(f"Waiting for a person: {texts}" if waiting else "")
        # Readable by any client without running workflow code (no worker needed):
        # `durable-teams pending` lists these from the visibility store, `answer` checks them.
        workflow.upsert_memo({PENDING_MEMO: [q.model_dump(mode="json") for q in self.state.pending.values()]})

    async def wait(self, question: Question, interruptible: bool = True) -> HumanReply | None:
        """Ask `question` and wait for its answer (None: none came in time). Unless
        `interruptible` is False, a long history cuts the wait with `Interrupted` (the question
        stays pending, and the next run re-attaches to it)."""
        if self.use_search_attribute and self.labels is None:
            self.labels = await labels.available_labels()
        self.state.pending[question.question_id] = question
        for seen in self.on_ask:
            seen(question)
        self._mark()
        qid = question.question_id
        # Measured from when it was asked, so a question carried across continue-as-new keeps
        # its deadline.
        elapsed = (workflow.now() - question.asked_at).total_seconds()
        remaining = max(question.timeout_seconds - elapsed, 0.001)
        try:
            await workflow.wait_condition(
                lambda: qid in self.state.answers or (interruptible and self.should_interrupt()),
                timeout=timedelta(seconds=remaining),
                timeout_summary=f"{question.kind} {qid}",
            )
        except TimeoutError:
            pass
        if qid not in self.state.answers and interruptible and self.should_interrupt():
            raise Interrupted(qid)
        reply = self.state.answers.get(qid)
        # Not in a `finally`: when the workflow is evicted or terminated mid-wait, there is no
        # workflow context left to update search attributes from.
        self.state.pending.pop(qid, None)
        self._mark()
        return reply

    def new_question(self, **fields: object) -> Question:
        """A question with the next id, or the pending one of the same tool call (a turn
        resumed after continue-as-new)."""
        call_id = fields.get("tool_call_id")
        for question in self.state.pending.values():  # resumed after continue-as-new
            if call_id and question.tool_call_id == call_id:
                return question
        self.state.questions_asked += 1
        return Question(
            question_id=f"q{self.state.questions_asked}",
            asked_at=workflow.now(),
            timeout_seconds=self.timeout_seconds,
            **fields,  # type: ignore[arg-type]
        )

    async def ask(self, agent: str, call: ToolCall, default_answer: str | None) -> str:
        """Run an `ask_human` call; returns the tool message content the model sees."""
        try:
            args = json.loads(call.arguments or "{}")
            text = str(args["question"])
            suggestions = [str(s) for s in args.get("suggestions") or []]
        except (ValueError, KeyError, TypeError, AttributeError):
            return 'Error: ask_human needs arguments {"question": "<text>"}.'
        question = self.new_question(
            text=text, agent=agent, suggestions=suggestions, default_answer=default_answer,
            tool_call_id=call.id,
        )
        reply = await self.wait(question)
        if reply is not None:
            return reply.text
        waited = describe_duration(question.timeout_seconds)
        if default_answer is not None:
            return f"(No answer from the user within {waited}; using the default answer: {default_answer})"
        return f"(No answer from the user within {waited}. Continue without it, or say what is missing.)"

    async def approve(self, agent: str, call: ToolCall) -> tuple[bool, str]:
        """Ask a person to approve a tool call. Returns (approved, note for the model)."""
        question = self.new_question(
            kind="approval",
            text=f"Approve {call.name}({call.arguments})?",
            agent=agent,
            tool=call.name,
            arguments=call.arguments,
            tool_call_id=call.id,
        )
        reply = await self.wait(question)
        if reply is None:
            waited = describe_duration(question.timeout_seconds)
            return False, f"Not run: {call.name} needs approval and none came within {waited}."
        if reply.approved:
            return True, ""
        reason = f": {reply.text}" if reply.text.strip() else ""
        return False, f"The user denied {call.name}{reason}. It was not run."
