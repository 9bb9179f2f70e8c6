"""Waiting for the replies to accepted turns without asking the workflow while nothing happens.

A turn is accepted by the `submit_turn` update, which completes at once; its reply appears in
the workflow's state later. One `ReplyWatch` per conversation and client process long-polls the
conversation's history and, each time a workflow task completes, asks the `turn_replies` query
once for every turn its waiters wait on: a hundred waiters on one conversation cost one query
per step of it, and nothing while it waits for a person.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from durable_teams.client.refusals import Patience
from durable_teams.workflows.state import TurnReply

ASK_PATIENCE = 60.0
"""Seconds the replies query is asked again while the server or worker is busy or away."""


class ConversationStopped(Exception):
    """The conversation stopped running before answering the turn."""


async def history_growth(client: Client, workflow_id: str) -> AsyncIterator[None]:
    """Yields at once, then each time a workflow task of the conversation completes (its
    state may have changed), by long-polling its history. Follows continue-as-new; ends when
    the conversation stops running."""
    handle = client.get_workflow_handle(workflow_id)
    while True:
        described = await handle.describe()
        known = described.raw_description.workflow_execution_info.history_length
        yield
        if described.status != WorkflowExecutionStatus.RUNNING:
            return
        run = client.get_workflow_handle(workflow_id, run_id=described.run_id)
        async for event in run.fetch_history_events(wait_new_event=True):
            if event.event_id > known and event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                yield
        # that run closed: a continue-as-new goes on in the next one (describe tells)


class ReplyWatch:
    """The waiters on one conversation in this process, and the task that serves them."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.client, self.workflow_id = client, workflow_id
        self.waiting: dict[int, list[asyncio.Future[TurnReply]]] = {}
        self.task: asyncio.Task[None] | None = None

    async def reply(self, number: int) -> TurnReply:
        future: asyncio.Future[TurnReply] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(number, []).append(future)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._serve())
        try:
            return await asyncio.shield(future)
        finally:
            waiters = self.waiting.get(number, [])
            if future in waiters:
                waiters.remove(future)
                if not waiters:
                    del self.waiting[number]

    async def _serve(self) -> None:
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            async for _ in history_growth(self.client, self.workflow_id):
                await self._deliver(handle)
                if not self.waiting:
                    return
            await self._deliver(handle)  # answered as it ended
            self._fail(ConversationStopped(f"conversation {self.workflow_id} stopped before answering"))
        except Exception as err:  # noqa: BLE001 - every waiter gets the reason
            self._fail(err)

    async def _deliver(self, handle: WorkflowHandle) -> None:
        numbers = sorted(self.waiting)
        if not numbers:
            return
        for reply in await ask_replies(handle, numbers):
            for future in self.waiting.pop(reply.turn, []):
                if not future.done():
                    future.set_result(reply)

    def _fail(self, err: BaseException) -> None:
        for futures in self.waiting.values():
            for future in futures:
                if not future.done():
                    future.set_exception(err)
        self.waiting.clear()


async def ask_replies(handle: WorkflowHandle, numbers: list[int]) -> list[TurnReply]:
    """The query, asked again while the server or worker is only busy or away, for up to
    `ASK_PATIENCE` seconds (then `ConversationBusy`, which every waiter gets)."""
    return await Patience(handle.id, ASK_PATIENCE).retry(
        lambda: handle.query("turn_replies", numbers, result_type=list[TurnReply]))


_WATCHES: weakref.WeakKeyDictionary[Client, dict[str, ReplyWatch]] = weakref.WeakKeyDictionary()


async def wait_for_reply(client: Client, workflow_id: str, number: int) -> TurnReply:
    """The reply to turn `number` of the conversation, once it is answered. Raises
    `ConversationStopped` when the conversation stops first."""
    watches = _WATCHES.setdefault(client, {})
    watch = watches.get(workflow_id)
    if watch is None:
        watch = watches[workflow_id] = ReplyWatch(client, workflow_id)
    try:
        return await watch.reply(number)
    finally:
        if not watch.waiting and watches.get(workflow_id) is watch:
            del watches[workflow_id]
