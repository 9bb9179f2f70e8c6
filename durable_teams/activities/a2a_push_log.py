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
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import PENDING_MEMO
from durable_teams.workflows.messages import Message
from durable_teams.workflows.push_targets import cursor_of, with_cursor
from durable_teams.workflows.state import LogPage, Question
from durable_teams.workflows.turn_view import FINAL, TurnState, answering, question_text

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


Told = tuple[str, TurnState]
"""A state to tell, and its cursor (`with_cursor`)."""


StateReader = Callable[[str, int], Awaitable[TurnState]]
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
                found = TurnState("INPUT_REQUIRED", question_text(q))
                return with_cursor(found, run, event), found
    found = await read_state(req.thread, req.turn)
    if found.state in FINAL:
        return with_cursor(found, run, max(after, last_event)), found
    return None


async def follow(req: WatchRequest, read_state: StateReader) -> Told | None:
    """The task's next notified state after the cursor `req.last`, read from the conversation's
    history (long-polled: no sleep between reads); None after `req.watch_seconds`, or when the
    run closed without one (the next watch follows the next run).
    `read_state(thread, turn)`: the task's state now (`a2a_push_delivery.task_state`)."""
    client = activity.client()
    cursor = cursor_of(req.last)
    assert cursor is not None
    described = await client.get_workflow_handle(req.thread).describe()
    run = described.run_id
    after = cursor[1] if cursor[0] == run else 0  # another run (continue-as-new): all of it is new
    handle = client.get_workflow_handle(req.thread, run_id=run)
    known = described.raw_description.workflow_execution_info.history_length
    seen: set[str] = set()
    asked: list[Asked] = []
    last_event = 0
    beating = asyncio.ensure_future(heartbeats(max(1.0, min(10.0, req.poll_seconds * 5))))
    try:
        async with asyncio.timeout(req.watch_seconds):
            async for event in handle.fetch_history_events(wait_new_event=True):
                new = await asked_in(client, [event], seen)
                asked += new
                last_event = event.event_id
                if event.event_id == known or event.event_id > known and (new or event.event_type in CHANGES):
                    change = await next_state(handle, req, run, after, asked, last_event, read_state)
                    if change is not None:
                        return change
            change = await next_state(handle, req, run, after, asked, last_event, read_state)  # the run closed
    except TimeoutError:
        return None
    finally:
        beating.cancel()
    return change


CHANGES = {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW}
"""Events after which the task's state may have changed (the workflow's code ran; a question
asked is an event of its own, a memo's upsert, after its workflow task completed)."""


async def heartbeats(every: float) -> None:
    """Heartbeat while a long poll waits (a poll may take longer than the heartbeat timeout)."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)
