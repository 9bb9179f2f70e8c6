"""Where a task's new push workflow starts reading its conversation: the cursor it is started
with (`PushInput.last`, durable_teams/workflows/push_targets.py), which decides what a config
is told first.

- A config the task's own message carried is told every state of the task: the cursor is
  before the run's history, however far the task went before the config was stored (a fast
  model may have ended the turn already: its end is still told).
- A config set on a task (`CreateTaskPushNotificationConfig`) is told the state the task is in
  when it is set, if it is one a notification tells (its question, or its end), then every
  state after it; never what came before it. The cursor is just before the event whose memo
  first listed the question the task asks, or, for an ended task, before its end (a caller that
  read the task working and set a config meanwhile still hears what it is waiting for).

The watch (durable_teams/activities/a2a_push_log.py) then tells each state from the history,
so every delivery has the same shape and ids, whichever way its config came."""

from __future__ import annotations

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client

from durable_teams.workflows.a2a_tasks import FINAL, TaskState
from durable_teams.workflows.human import PENDING_MEMO
from durable_teams.workflows.push_targets import from_the_start, newest_kept, with_cursor
from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import question_text

BEFORE = TaskState("WORKING")
"""The state a cursor names when the state after it is still to be told (a working task is
never told: the next notified state is news)."""
PAGE = 100


async def first_cursor(client: Client, thread: str, now: TaskState, fresh: bool) -> str:
    """The cursor of a push workflow started for a config of the task of `thread` whose state
    is `now` as the caller reads it (`fresh`: the task's own message carried the config)."""
    if fresh:
        return from_the_start()
    run = (await client.get_workflow_handle(thread).describe()).run_id
    end = await history_end(client, thread, run)
    if now.state in FINAL:
        return with_cursor(BEFORE, run, end)
    if now.state == "INPUT_REQUIRED":
        asked = await first_listed(client, thread, run, now.text)
        if asked is not None:
            return with_cursor(BEFORE, run, asked - 1)
    return with_cursor(now, run, end)


def reverse_request(client: Client, thread: str, run: str, size: int, token: bytes = b""
                    ) -> GetWorkflowExecutionHistoryReverseRequest:
    return GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace, maximum_page_size=size, next_page_token=token,
        execution=WorkflowExecution(workflow_id=thread, run_id=run))


async def history_end(client: Client, thread: str, run: str) -> int:
    """The id of the last event the run's history holds (not a count that may include a
    workflow task in flight, whose events may yet be dropped)."""
    newest = await client.workflow_service.get_workflow_execution_history_reverse(
        reverse_request(client, thread, run, 4))
    return newest_kept(newest.history.events)


async def listed_questions(client: Client, event: HistoryEvent) -> list[Question] | None:
    """The pending questions a memo upsert lists (None: the event lists none)."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
        return None
    payload = event.workflow_properties_modified_event_attributes.upserted_memo.fields.get(PENDING_MEMO)
    if payload is None:
        return None
    listed, = await client.data_converter.decode([payload])
    return [Question.model_validate(raw) for raw in listed or []]


async def first_listed(client: Client, thread: str, run: str, text: str) -> int | None:
    """The id of the event whose memo first listed the pending question the task asks (`text`,
    as `question_text` words it): the oldest of the newest upserts that list it, read back from
    the run's end. None when no upsert lists it (answered meanwhile)."""
    first: int | None = None
    token = b""
    while True:
        page = await client.workflow_service.get_workflow_execution_history_reverse(
            reverse_request(client, thread, run, PAGE, token))
        for event in page.history.events:
            listed = await listed_questions(client, event)
            if listed is None:
                continue
            if not any(question_text(q) == text for q in listed):
                return first
            first = event.event_id
        token = page.next_page_token
        if not token:
            return first
