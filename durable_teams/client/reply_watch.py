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
from collections.abc import AsyncGenerator

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from durable_teams.client.refusals import Patience, TurnAbandoned
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import TurnReply

ASK_PATIENCE = 60.0
"""Seconds the replies query is asked again while the server or worker is busy or away."""


class ConversationStopped(Exception):
    """The conversation stopped running before answering the turn."""


async def history_growth(client: Client, workflow_id: str) -> AsyncGenerator[str, None]:
    """Yields the current run's id at once, then each time a workflow task of the
    conversation completes (its state may have changed), by long-polling its history. Follows
    continue-as-new (and a rewind's new run); ends when the conversation stops running."""
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


class ReplyWatch:
    """The waiters on one conversation in this process, and the task that serves them."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.client, self.workflow_id = client, workflow_id
        self.waiting: dict[int, list[asyncio.Future[TurnReply]]] = {}
        self.turn_ids: dict[asyncio.Future[TurnReply], tuple[str, str | None]] = {}
        """A waiter's turn id, and the run it knows took the turn (None: the current one)."""
        self.task: asyncio.Task[None] | None = None

    async def reply(self, number: int, turn_id: str | None = None, run_id: str | None = None) -> TurnReply:
        future: asyncio.Future[TurnReply] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(number, []).append(future)
        if turn_id:
            self.turn_ids[future] = (turn_id, run_id)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._serve())
        try:
            return await asyncio.shield(future)
        finally:
            self.turn_ids.pop(future, None)
            waiters = self.waiting.get(number, [])
            if future in waiters:
                waiters.remove(future)
                if not waiters:
                    del self.waiting[number]

    async def _serve(self) -> None:
        handle = self.client.get_workflow_handle(self.workflow_id)
        reset: dict[str, bool] = {}
        try:
            async for current in history_growth(self.client, self.workflow_id):
                await self._follow(handle, current, reset)
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

    async def _follow(self, handle: WorkflowHandle, current: str, reset: dict[str, bool]) -> None:
        """Follow each waiter's turn to run `current`. After a rewind (a reset terminates the
        run it leaves), a waiter whose turn the new branch has not taken (it was taken after the
        checkpoint, in the branch abandoned) gets `TurnAbandoned`, not another turn's reply and
        not an endless wait. `reset`: what is known of runs left, by run id."""
        for number, futures in list(self.waiting.items()):
            for future in list(futures):
                if future not in self.turn_ids or future.done():
                    continue
                turn_id, known = self.turn_ids[future]
                if known is not None and known != current:
                    if known not in reset:
                        left = await self.client.get_workflow_handle(self.workflow_id, run_id=known).describe()
                        reset[known] = left.status == WorkflowExecutionStatus.TERMINATED
                    if reset[known] and await self._taken(handle, turn_id) != number:
                        futures.remove(future)
                        future.set_exception(TurnAbandoned(
                            f"turn {number} of conversation {self.workflow_id} was taken by the branch a "
                            "rewind abandoned (it came after the checkpoint rewound to), so the "
                            "conversation that goes on will not answer it; send it again"))
                        continue
                self.turn_ids[future] = (turn_id, current)
            if not futures:
                del self.waiting[number]

    @staticmethod
    async def _taken(handle: WorkflowHandle, turn_id: str) -> object:
        """The number the conversation's current run took turn `turn_id` as (None: it did not)."""
        return await Patience(handle.id, ASK_PATIENCE).retry(lambda: handle.query(TeamWorkflow.turn_number, turn_id))

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
        lambda: handle.query(TeamWorkflow.turn_replies, numbers))


_WATCHES: weakref.WeakKeyDictionary[Client, dict[str, ReplyWatch]] = weakref.WeakKeyDictionary()


async def wait_for_reply(client: Client, workflow_id: str, number: int, turn_id: str | None = None,
                         run_id: str | None = None) -> TurnReply:
    """The reply to turn `number` of the conversation, once it is answered. Raises
    `ConversationStopped` when the conversation stops first, `TurnAbandoned` (given the turn's
    `turn_id`, and the id of the run that took it if known) when a rewind abandoned the branch
    that took it."""
    watches = _WATCHES.setdefault(client, {})
    watch = watches.get(workflow_id)
    if watch is None:
        watch = watches[workflow_id] = ReplyWatch(client, workflow_id)
    try:
        return await watch.reply(number, turn_id, run_id)
    finally:
        if not watch.waiting and watches.get(workflow_id) is watch:
            del watches[workflow_id]
