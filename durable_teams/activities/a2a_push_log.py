"""An A2A task's notified states read from its conversation's own event log, in order, so a
state shorter than any poll (an approval answered at once) is still told, at least once.

The states of turn N worth a notification are each question the turn asked (input-required:
every upsert of the conversation's memo that lists a question new to it, whose tool call is in
turn N's stretch of the log) and then its end (completed, failed, canceled). A push workflow's
cursor (`PushInput.last`, durable_teams/workflows/a2a_push.py) is the signature of the state
told last and where it was in the conversation's history: `STATE:digest@<run id>/<event id>`;
the next state is the first one after it. (A cursor without `@`, from a push workflow started
by an earlier release, is followed by polling the task's state, as those were.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle

from durable_teams.workflows.a2a_push import WatchRequest
from durable_teams.workflows.a2a_tasks import FINAL, TaskState
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import PENDING_MEMO
from durable_teams.workflows.messages import Message
from durable_teams.workflows.push_targets import cursor_of, with_cursor
from durable_teams.workflows.state import LogPage, Question
from durable_teams.workflows.turn_states import answering, question_text

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


async def next_state(handle: WorkflowHandle, req: WatchRequest, run: str, after: int, asked: list[Asked],
                     last_event: int, read_state: StateReader) -> Told | None:
    """The turn's first notified state after event `after`: a question of its own, else its end."""
    status = await handle.query(TeamWorkflow.status)
    later = [(event, q) for event, q in asked if event > after]
    if later:
        calls = await turn_call_ids(handle, req.turn, answering(status))
        for event, q in later:
            if q.tool_call_id is not None and q.tool_call_id in calls:
                found = TaskState("INPUT_REQUIRED", question_text(q))
                return with_cursor(found, run, event), found
    found = await read_state(req.thread, req.turn)
    if found.state in FINAL:
        return with_cursor(found, run, max(after, last_event)), found
    return None


async def follow(req: WatchRequest, read_state: StateReader) -> Told | None:
    """The task's next notified state after the cursor `req.last`, read from the conversation's
    history (read again every `READ_SECONDS`); None after `req.watch_seconds`, or when the run
    closed without one (the next watch follows the next run).
    `read_state(thread, turn)`: the task's state now (`a2a_push_delivery.task_state`)."""
    client = activity.client()
    cursor = cursor_of(req.last)
    assert cursor is not None
    described = await client.get_workflow_handle(req.thread).describe()
    run = described.run_id
    after = cursor[1] if cursor[0] == run else 0  # another run (continue-as-new): all of it is new
    handle = client.get_workflow_handle(req.thread, run_id=run)
    history = History(client, handle)
    beating = asyncio.ensure_future(heartbeats(max(1.0, min(10.0, req.poll_seconds * 5))))
    try:
        async with asyncio.timeout(req.watch_seconds):
            while True:
                await history.read()
                change = await next_state(handle, req, run, after, history.asked, history.last, read_state)
                if change is not None or history.closed:
                    return change  # (the run closed: the next watch follows the next run)
                await asyncio.sleep(READ_SECONDS)
    except TimeoutError:
        return None
    finally:
        beating.cancel()


READ_SECONDS = 0.5
"""How often the history is read again while the task waits: what it tells comes from the
history, so a state shorter than this is told all the same (this is how soon, not whether)."""
CLOSING = {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW}
"""Events that close a run."""


class History:
    """A run's history as read so far: the questions its memo listed, its last event, whether
    it closed."""

    def __init__(self, client: Client, handle: WorkflowHandle) -> None:
        self.client, self.handle = client, handle
        self.seen: set[str] = set()
        self.asked: list[Asked] = []
        self.last = 0
        self.closed = False

    async def read(self) -> None:
        """The history as it is now, read whole (a workflow task in flight shows events whose
        ids its completion may give to others: questions are known by their ids, not events')."""
        async for event in self.handle.fetch_history_events():
            self.closed = self.closed or event.event_type in CLOSING
            self.asked += await asked_in(self.client, [event], self.seen)
            self.last = max(self.last, event.event_id)


async def heartbeats(every: float) -> None:
    """Heartbeat while the task waits."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)
