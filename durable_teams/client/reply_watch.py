"""Waiting for the replies to accepted turns without asking the workflow while nothing happens.

A turn is accepted by the `submit_turn` update, which completes at once; its reply appears in
the workflow's state later. One `ReplyWatch` per conversation and client process long-polls the
conversation's history and, each time a workflow task completes, asks the `turn_replies` query
once for every turn its waiters wait on: a hundred waiters on one conversation cost one query
per step of it, and nothing while it waits for a person.

A waiter knows the run that took its turn. When the thread's run changes (a continue-as-new
carries its queued turns along; a rewind, `durable-teams rewind`, does not), the new run is
asked once whether it holds the turn under the same number: if not, the waiter gets
`TurnAbandoned`, never the reply of another turn the new branch gives that number.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from durable_teams.client.refusals import Patience, TurnAbandoned
from durable_teams.workflows.state import TurnReply

ASK_PATIENCE = 60.0
"""Seconds the replies query is asked again while the server or worker is busy or away."""


class ConversationStopped(Exception):
    """The conversation stopped running before answering the turn."""


async def history_growth(client: Client, workflow_id: str) -> AsyncIterator[str]:
    """Yields the current run's id at once, then each time a workflow task of the conversation
    completes (its state may have changed), by long-polling its history. Follows
    continue-as-new and rewinds; ends when the conversation stops running."""
    handle = client.get_workflow_handle(workflow_id)
    while True:
        described = await handle.describe()
        known = described.raw_description.workflow_execution_info.history_length
        yield described.run_id
        if described.status != WorkflowExecutionStatus.RUNNING:
            return
        run = client.get_workflow_handle(workflow_id, run_id=described.run_id)
        async for event in run.fetch_history_events(wait_new_event=True):
            if event.event_id > known and event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                yield described.run_id
        # that run closed: a continue-as-new goes on in the next one (describe tells)


@dataclass
class Taken:
    """Which turn a waiter waits on: its id, and the run that took it (None: not known)."""

    turn_id: str
    run_id: str | None = None


@dataclass
class _Waiter:
    number: int
    taken: Taken
    future: asyncio.Future[TurnReply] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class ReplyWatch:
    """The waiters on one conversation in this process, and the task that serves them."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.client, self.workflow_id = client, workflow_id
        self.waiting: dict[int, list[_Waiter]] = {}
        self.task: asyncio.Task[None] | None = None

    async def reply(self, number: int, taken: Taken | None = None) -> TurnReply:
        waiter = _Waiter(number, taken or Taken(""))
        self.waiting.setdefault(number, []).append(waiter)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._serve())
        try:
            return await asyncio.shield(waiter.future)
        finally:
            waiters = self.waiting.get(number, [])
            if waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del self.waiting[number]

    async def _serve(self) -> None:
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            async for run_id in history_growth(self.client, self.workflow_id):
                await self._drop_abandoned(run_id)
                await self._deliver(handle)
                if not self.waiting:
                    return
            await self._deliver(handle)  # answered as it ended
            self._fail(ConversationStopped(f"conversation {self.workflow_id} stopped before answering"))
        except Exception as err:  # noqa: BLE001 - every waiter gets the reason
            self._fail(err)

    async def _drop_abandoned(self, run_id: str) -> None:
        """Fail the waiters whose turn run `run_id` does not hold (a rewind went back before it)."""
        run = self.client.get_workflow_handle(self.workflow_id, run_id=run_id)
        for waiters in list(self.waiting.values()):
            for waiter in list(waiters):
                if waiter.taken.run_id in (None, run_id) or not waiter.taken.turn_id:
                    waiter.taken.run_id = run_id
                    continue
                turn_id = waiter.taken.turn_id
                held = await Patience(self.workflow_id, ASK_PATIENCE).retry(
                    lambda: run.query("turn_number", turn_id))  # noqa: B023 - awaited here
                if held == waiter.number:
                    waiter.taken.run_id = run_id
                elif not waiter.future.done():
                    waiter.future.set_exception(TurnAbandoned(
                        f"conversation {self.workflow_id} was rewound to before turn {waiter.number} "
                        "while it waited for its answer: the thread goes on without it; send it again"))

    async def _deliver(self, handle: WorkflowHandle) -> None:
        numbers = sorted(self.waiting)
        if not numbers:
            return
        for reply in await ask_replies(handle, numbers):
            for waiter in self.waiting.pop(reply.turn, []):
                if not waiter.future.done():
                    waiter.future.set_result(reply)

    def _fail(self, err: BaseException) -> None:
        for waiters in self.waiting.values():
            for waiter in waiters:
                if not waiter.future.done():
                    waiter.future.set_exception(err)
        self.waiting.clear()


async def ask_replies(handle: WorkflowHandle, numbers: list[int]) -> list[TurnReply]:
    """The query, asked again while the server or worker is only busy or away, for up to
    `ASK_PATIENCE` seconds (then `ConversationBusy`, which every waiter gets)."""
    return await Patience(handle.id, ASK_PATIENCE).retry(
        lambda: handle.query("turn_replies", numbers, result_type=list[TurnReply]))


_WATCHES: weakref.WeakKeyDictionary[Client, dict[str, ReplyWatch]] = weakref.WeakKeyDictionary()


async def wait_for_reply(client: Client, workflow_id: str, number: int, taken: Taken | None = None) -> TurnReply:
    """The reply to turn `number` of the conversation, once it is answered. Raises
    `ConversationStopped` when the conversation stops first, `TurnAbandoned` when a rewind
    took it back to before the turn `taken` names."""
    watches = _WATCHES.setdefault(client, {})
    watch = watches.get(workflow_id)
    if watch is None:
        watch = watches[workflow_id] = ReplyWatch(client, workflow_id)
    try:
        return await watch.reply(number, taken)
    finally:
        if not watch.waiting and watches.get(workflow_id) is watch:
            del watches[workflow_id]
