"""An A2A task's notified states read from its conversation's own event log, in order, so a
state shorter than any read (an approval answered at once) is still told, at least once.

The states of turn N worth a notification are each question the turn asked (input-required:
every upsert of the conversation's memo that lists a question new to it, whose tool call is in
turn N's stretch of the log) and then its end (completed, failed, canceled). A push workflow's
cursor (`PushInput.last`, durable_teams/workflows/a2a_push.py) is the signature of the state
told last and where it was in the conversation's history: `STATE:digest@<run id>/<event id>`;
the next state is the first one after it. (A cursor without `@`, from a push workflow started
by an earlier release, is followed by polling the task's state, as those were.)

The watch follows the run's history forward by long polls (`RunLog`): it reads the history
once, then waits on the server for its next events, and reads the task's state only when a
workflow task completed (the only time its state can change). Its place in the history (the
long poll's token, the questions seen) goes in its heartbeats, so a retried watch goes on from
there. An end is told only after every question before it: the state is read first, then the
history up to its newest event (`RunLog.up_to`), whose questions come first."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import timedelta

from pydantic import Field, ValidationError
from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import (
    GetWorkflowExecutionHistoryRequest,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.workflows.a2a_push import WatchRequest
from durable_teams.workflows.a2a_tasks import FINAL, TaskState
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.human import PENDING_MEMO
from durable_teams.workflows.messages import Message
from durable_teams.workflows.push_targets import cursor_of, newest_kept, with_cursor
from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import answering, question_text
from durable_teams.workflows.wire_base import Wire

Asked = tuple[int, Question]
"""A question and the id of the history event whose memo first listed it."""


def is_turn_start(message: Message) -> bool:
    return message.role == "user" and message.kind == "message" and message.agent_run == 0


async def turn_start(handle: WorkflowHandle, number: int, latest: int, page_size: int = 50) -> int | None:
    """The log index of turn `number`'s message, counted back from the end (`latest`: the
    newest turn begun); None when the log does not hold it (the turn has not begun)."""
    back, end = latest - number, (await handle.query(TeamWorkflow.log_page, args=[0, 0])).total
    while end > 0 and back >= 0:
        start = max(0, end - page_size)
        page: LogPage = await handle.query(TeamWorkflow.log_page, args=[start, end - start])
        for offset in range(len(page.messages) - 1, -1, -1):
            if is_turn_start(page.messages[offset]):
                if back == 0:
                    return start + offset
                back -= 1
        end = start
    return None


async def turn_call_ids(handle: WorkflowHandle, number: int, latest: int) -> set[str]:
    """The ids of the tool calls in turn `number`'s stretch of the log, from its message to
    the next turn's."""
    start = await turn_start(handle, number, latest)
    ids: set[str] = set()
    index = start
    while start is not None and index is not None:
        page: LogPage = await handle.query(TeamWorkflow.log_page, args=[index, 200])
        for at, message in enumerate(page.messages, start=index):
            if at > start and is_turn_start(message):
                return ids
            ids.update(call.id for call in message.tool_calls)
        index += len(page.messages)
        if not page.messages or index >= page.total:
            break
    return ids


async def asked_in(client: Client, events: Iterable[HistoryEvent], seen: set[str]) -> list[Asked]:
    """The questions `events` list for the first time (not in `seen`, which they join)."""
    asked: list[Asked] = []
    for event in events:
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            continue
        payload = event.workflow_properties_modified_event_attributes.upserted_memo.fields.get(PENDING_MEMO)
        if payload is None:
            continue
        listed, = await client.data_converter.decode([payload])
        for raw in listed or []:
            question = Question.model_validate(raw)
            if question.question_id not in seen:
                seen.add(question.question_id)
                asked.append((event.event_id, question))
    return asked


Told = tuple[str, TaskState]
"""A state to tell, and its cursor (`with_cursor`)."""


StateReader = Callable[[str, int], Awaitable[TaskState]]
"""The task (thread, turn)'s state now (`a2a_push_delivery.task_state`)."""

LONG_POLL = timedelta(seconds=70)
"""The longest one long poll of the history may take (the server answers within about 20 s,
with nothing when nothing happened)."""
CLOSING = {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW}
"""Events that close a run."""
CHANGES = {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, *CLOSING}
"""Events after which the task's state may be another (the workflow's code ran, or the run closed)."""


class AskedAt(Wire):
    event: int
    question: Question


class HistoryPlace(Wire):
    """How far a watch has read a run's history: what its heartbeats carry, so a retried watch
    goes on from there. `token`: the long poll's next page token (base64; "" for the start);
    `seen`: the ids of the questions listed so far; `asked`: those listed after the cursor
    that may be the turn's."""

    run: str
    token: str = ""
    last: int = 0
    closed: bool = False
    seen: list[str] = Field(default_factory=list)
    asked: list[AskedAt] = Field(default_factory=list)

    @classmethod
    def resumed(cls, details: Iterable[object]) -> HistoryPlace | None:
        """The place a failed attempt of this watch heartbeat last (None: none, or unreadable)."""
        for detail in details:
            try:
                return cls.model_validate(detail)
            except ValidationError:
                return None
        return None


class RunLog:
    """A run's history read forward by long polls, from where `place` left it."""

    def __init__(self, client: Client, thread: str, place: HistoryPlace) -> None:
        self.client, self.thread, self.place = client, thread, place
        self.seen = set(place.seen)

    async def page(self) -> list[HistoryEvent]:
        """The events after the last one read: at once when there are some, else the next ones
        when they come (or none after the server's long-poll time)."""
        place = self.place
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self.client.namespace, execution=WorkflowExecution(workflow_id=self.thread, run_id=place.run),
            next_page_token=base64.b64decode(place.token), wait_new_event=True)
        try:
            answer = await self.client.workflow_service.get_workflow_execution_history(
                request, retry=True, timeout=LONG_POLL)
        except RPCError as err:
            if err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                return []  # a long poll cut short: ask again
            if err.status != RPCStatusCode.INVALID_ARGUMENT or not place.token:
                raise
            for name, value in HistoryPlace(run=place.run):  # a place the server no longer takes: from the start
                setattr(place, name, value)
            self.seen = set()
            return []
        events = list(answer.history.events)
        for at, question in await asked_in(self.client, events, self.seen):
            place.asked.append(AskedAt(event=at, question=question))
        place.seen = sorted(self.seen)
        place.last = max([place.last, *(e.event_id for e in events)])
        place.token = base64.b64encode(answer.next_page_token).decode()
        place.closed = not answer.next_page_token or any(e.event_type in CLOSING for e in events)
        activity.heartbeat(place.model_dump(mode="json"))
        return events

    async def changes(self) -> AsyncIterator[None]:
        """Once for what a failed attempt read already (a retried watch looks at it before it
        waits), once for the history as it is, then each time the task's state may have changed."""
        if self.place.last:
            yield
        first = not self.place.last
        while not self.place.closed:
            events = await self.page()
            if first or any(e.event_type in CHANGES for e in events):
                yield
            first = False

    async def up_to(self, event_id: int) -> None:
        """Read on until event `event_id` (one the history holds) or the run's end."""
        while self.place.last < event_id and not self.place.closed:
            await self.page()

    async def newest(self) -> int:
        """The id of the newest event the history holds now (not a workflow task's in flight)."""
        newest = await self.client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=self.client.namespace, maximum_page_size=4,
                execution=WorkflowExecution(workflow_id=self.thread, run_id=self.place.run)), retry=True)
        return newest_kept(newest.history.events)


async def first_question(handle: WorkflowHandle, req: WatchRequest, place: HistoryPlace, after: int,
                         now: TaskState | None = None) -> Told | None:
    """The turn's first question listed after event `after`, as read so far: one whose tool
    call is in the turn's stretch of the log (the others are dropped: a question's turn never
    changes), or one of no tool call (a breakpoint around an agent's run) that the task asks
    `now`."""
    place.asked = [a for a in place.asked if a.event > after]
    if any(a.question.tool_call_id is not None for a in place.asked):
        calls = await turn_call_ids(handle, req.turn, answering(await handle.query(TeamWorkflow.status)))
        place.asked = [a for a in place.asked if a.question.tool_call_id in (calls | {None})]
    for asked in place.asked:
        found = TaskState("INPUT_REQUIRED", question_text(asked.question))
        if asked.question.tool_call_id is not None or now == found:
            return with_cursor(found, place.run, asked.event), found
    return None


async def next_told(log: RunLog, req: WatchRequest, after: int, read_state: StateReader) -> Told | None:
    """The turn's first notified state after event `after` in what `log` has read: a question
    of its own, else its end, read before the rest of the history up to now (so every question
    before the end is told first); None when neither, or when the run closed into another."""
    place = log.place
    handle = log.client.get_workflow_handle(req.thread, run_id=place.run)
    told = await first_question(handle, req, place, after)
    if told is not None:
        return told
    if place.closed and (await log.client.get_workflow_handle(req.thread).describe()).run_id != place.run:
        return None  # continued as new (or reset): the next watch follows the next run
    state = await read_state(req.thread, req.turn)
    if state.state not in FINAL:
        return await first_question(handle, req, place, after, state) if state.state == "INPUT_REQUIRED" else None
    await log.up_to(await log.newest())
    told = await first_question(handle, req, place, after)
    return told or (with_cursor(state, place.run, max(after, place.last)), state)


async def follow(req: WatchRequest, read_state: StateReader) -> Told | None:
    """The task's next notified state after the cursor `req.last`, read from the conversation's
    history as it grows; None after `req.watch_seconds`, or when the run closed without one
    (the next watch follows the next run).
    `read_state(thread, turn)`: the task's state now (`a2a_push_delivery.task_state`)."""
    client = activity.client()
    cursor = cursor_of(req.last)
    assert cursor is not None
    place = HistoryPlace.resumed(activity.info().heartbeat_details)
    if place is None:
        place = HistoryPlace(run=(await client.get_workflow_handle(req.thread).describe()).run_id)
    after = cursor[1] if cursor[0] == place.run else 0  # another run (continue-as-new): all of it is new
    log = RunLog(client, req.thread, place)
    beating = asyncio.ensure_future(heartbeats(max(1.0, min(10.0, req.poll_seconds * 5)), place))
    try:
        async with asyncio.timeout(req.watch_seconds):
            async for _ in log.changes():
                told = await next_told(log, req, after, read_state)
                if told is not None or place.closed:
                    return told
    except TimeoutError:
        pass
    finally:
        beating.cancel()
    return None


async def heartbeats(every: float, place: HistoryPlace) -> None:
    """Heartbeat (with how far the history is read) while a long poll waits."""
    while True:
        activity.heartbeat(place.model_dump(mode="json"))
        await asyncio.sleep(every)
