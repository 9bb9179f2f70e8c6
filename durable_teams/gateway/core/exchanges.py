"""The exchanges half of `Gateway` (durable_teams/gateway/core/threads.py): a turn sent and
accepted, a question answered, and the outcome each request waits for (its own turn's, never a
later one's), read from the workflow's state.

Every door waits here, one way (`turn_changes`): the `turn_outcome` update, one call the server
holds until the turn's outcome; when that cannot tell, a long poll of the thread's history, a
read each time a step of it completes. No status query is asked on a timer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.client.refusals import (
    ConversationBusy,
    ConversationEnded,
    Patience,
    QuestionClosed,
    TurnConflict,
)
from durable_teams.client.reply_watch import history_growth
from durable_teams.client.send import AcceptedTurn, send_answer, submit_turn
from durable_teams.client.server_state import questions_of
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.gateway.core.outcomes import Outcome, Waiter, _now
from durable_teams.gateway.core.requests import BadRequest
from durable_teams.gateway.core.thread_log import ThreadLog, background
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus, TurnOutcome
from durable_teams.workflows.state import TurnReply
from durable_teams.workflows.turn_states import answering, question_text

if TYPE_CHECKING:
    from temporalio.client import Client

    from durable_teams.live.hub import LiveHub

T = TypeVar("T")


@dataclass
class Exchanges:
    """Turns, answers and outcomes, through `client`: a turn's start found in `log`, live text
    from `hub`, `busy_seconds` to wait for a busy thread or server, `poll_seconds` between reads
    where nothing can be waited on; `raise_unless_running` tells why a write found no thread."""

    client: Client
    hub: LiveHub
    log: ThreadLog
    raise_unless_running: Callable[[str], Awaitable[None]]
    busy_seconds: float
    poll_seconds: float

    async def accept_turn(self, thread: str, text: str, sender: str | None, turn_id: str | None,
                          patience: Patience | None = None, again: int | None = None,
                          update_key: str | None = None) -> tuple[int, AcceptedTurn]:
        """Send a turn and return once the workflow has accepted it, with the log index its
        events start from (a `turn_id` sent again is the same turn: `again`, its number, when
        known, and its events from its start, the question it waits on included; `update_key`:
        `submit_turn`'s)."""
        patience = patience or Patience(thread, self.busy_seconds)  # one budget for the whole request
        index = None
        if again is not None:
            index = await self.log.turn_start(thread, again, answering(await self.status(thread)))
        if index is None:
            index = await self.patiently(lambda: self.log.log_total(thread), patience)
        accepted = await submit_turn(self.client, thread, text, sender=sender, turn_id=turn_id,
                                     patience=patience, update_key=update_key)
        return index, accepted

    async def subscribed(self, thread: str, send: Callable[[], Awaitable[T]], steps: bool = False
                         ) -> tuple[T, AbstractAsyncContextManager[asyncio.Queue[Any]], asyncio.Queue[Any]]:
        """`send()` with the thread's live deltas subscribed first, so a fast model's first
        words are not missed (`steps`: its announced log messages too, `LiveHub.subscribe_steps`).
        The subscription is the caller's to close (closed here if `send` fails)."""
        subscription: AbstractAsyncContextManager[asyncio.Queue[Any]] = (
            self.hub.subscribe_steps(thread) if steps else self.hub.subscribe(thread))
        deltas = await subscription.__aenter__()
        try:
            return await send(), subscription, deltas
        except BaseException:
            await subscription.__aexit__(None, None, None)
            raise

    async def patiently(self, call: Callable[[], Awaitable[Any]], patience: Patience) -> Any:
        """`call`, sent again while the server is too busy to answer (a query timed out under
        load) until `patience` runs out (`ConversationBusy`, 429: the turn was not sent)."""
        return await patience.retry(call)

    async def status(self, thread: str) -> ConversationStatus:
        return await self.client.get_workflow_handle(thread).query(TeamWorkflow.status)
    async def reply(self, thread: str, question_id: str | None, update_key: str | None = None, **reply: Any) -> str:
        """Answer a question (`update_key`: `send_answer`'s); `ConversationBusy` (429) when no
        worker takes the answer within `busy_seconds` (the update waits for one: workers being
        redeployed, say)."""
        try:
            return await asyncio.wait_for(send_answer(self.client, thread, question_id, reply, update_key),
                                          self.busy_seconds)
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):  # the SDK's word for it
            raise ConversationBusy(
                f"no worker took the answer to {thread} within {self.busy_seconds:g} s; it may still "
                "be applied when one does: check the question before answering again") from None
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:  # "workflow execution already completed"
                await self.raise_unless_running(thread)
            raise

    async def approval_in_words(self, thread: str, question_id: str, text: str) -> bool | None:
        """The `approved` a typed answer gives when `question_id` is an approval (`approval_of`,
        strictly); None for another question. An answer that is not a plain yes or no is a
        `BadRequest` (400) that asks again: the approval stays open."""
        try:  # from the memo (no worker needed: without one, the answer is a 429 as before)
            questions = await questions_of(self.client.get_workflow_handle(thread))
        except (RPCError, WorkflowQueryFailedError):
            return None  # the reply says what is wrong with the thread
        asked = next((q for q in questions if q.question_id == question_id), None)
        if asked is None or asked.kind != "approval":
            return None
        approved = approval_of(text)
        if approved is None:
            raise BadRequest(f"{ask_again(asked.tool or 'the tool')} ({text[:80]!r} is not a plain yes or "
                             'no; or send "approved": true or false)')
        return approved
    async def begin_exchange(self, thread: str, text: str, turn_id: str | None = None,
                             max_tokens: int | None = None, *, seen: ConversationStatus | None = None,
                             again: bool = False, turn: int | None = None, update_key: str | None = None) -> Waiter:
        """One OpenAI-style exchange, started: `text` answers the thread's open question, or
        is sent as a turn (accepted by the workflow before this returns, so the caller may
        acknowledge it), under the input id `turn_id`. Returns what waits for the outcome:
        (kind, text), kind "reply", "question" or "failed" (the turn failed: the text says why).

        `seen`: the thread as the caller found it; the text then goes in only if the thread is
        still there (its question open, no other turn since), else `TurnConflict`. `again`: the
        thread took this very input already (a retry): nothing is sent, its outcome (that of
        `turn` when known) is awaited. `update_key`: the turn's or answer's update goes in
        under it (`submit_turn`'s)."""
        status = seen or await self.status(thread)
        if update_key and turn_id and status.pending and not again:
            # a question asked since the caller looked: by this very input's turn, sent at once under its key?
            turn = await self.turn_of(thread, turn_id)
            again = turn is not None
        if again:  # the turn it started, or the turn whose question it answered
            number = turn or (await self.turn_of(thread, turn_id) if turn_id else None)
            target = number or answering(status)
            return Waiter(lambda: self._outcome(thread, set(), target_turn=target, turn=None), target)
        ids = "last_input_id" in status.model_fields_set  # a worker that records input ids
        if status.pending:
            return await self._answer_exchange(thread, text, turn_id, status, seen, update_key, ids)
        seen_ids: set[str] = set()  # no question open
        accepted = await submit_turn(self.client, thread, text, turn_id=turn_id,
                                     busy_timeout=self.busy_seconds, max_tokens=max_tokens,
                                     after_turns=status.turns if seen is not None and ids else None,
                                     update_key=update_key)

        async def outcome() -> Outcome:
            waited = await self.outcome_by_update(thread, accepted.number, seen_ids, accepted.run_id)
            if waited is not None:
                return waited
            turn = background(accepted.watched_reply())
            try:
                return await self._outcome(thread, seen_ids, target_turn=None, turn=turn)
            finally:
                turn.cancel()  # a question came back: the turn goes on in the workflow
        return Waiter(outcome, accepted.number)

    async def _answer_exchange(self, thread: str, text: str, turn_id: str | None, status: ConversationStatus,
                               seen: ConversationStatus | None, update_key: str | None, ids: bool) -> Waiter:
        """`begin_exchange` on a thread with an open question: the text is its answer (an
        approval read strictly, asked again when unclear)."""
        seen_ids = {q.question_id for q in status.pending}
        q = status.pending[0]
        answer: dict[str, Any] = {"text": text} | ({"input_id": turn_id} if ids and turn_id else {})
        if q.kind == "approval":
            approved = approval_of(text)
            if approved is None:  # unclear: ask again, never take it as a denial
                return Waiter(lambda: _now(Outcome("question", f"{ask_again(q.tool or q.agent)} "
                                            f"{question_text(q)}")), answering(status))
            answer["approved"] = approved
        try:
            await self.reply(thread, q.question_id, update_key, **answer)
        except QuestionClosed as closed:
            if seen is not None:  # another request answered it since the caller looked
                raise TurnConflict(f"{thread}: {closed}") from None
            raise
        return Waiter(lambda: self._outcome(thread, seen_ids, target_turn=answering(status), turn=None),
                      answering(status))

    async def turn_of(self, thread: str, turn_id: str) -> int | None:
        """The turn the thread started for the input `turn_id`, or answered with it (None: unknown)."""
        handle = self.client.get_workflow_handle(thread)
        try:
            number = (await handle.query(TeamWorkflow.inputs_taken, turn_id) or {}).get(turn_id)
        except WorkflowQueryFailedError:  # a worker of an earlier release: turns only
            number = await handle.query(TeamWorkflow.turn_number, turn_id)
        return number if isinstance(number, int) else None

    async def reply_of(self, thread: str, number: int, latest: TurnReply) -> TurnReply:
        """Turn `number`'s reply (the workflow keeps the latest 200); `latest` if gone."""
        replies = await self.client.get_workflow_handle(thread).query(
            TeamWorkflow.turn_replies, [number])
        return replies[0] if replies else latest

    async def converse(self, thread: str, text: str, turn_id: str | None = None) -> Outcome:
        """`begin_exchange`, then its outcome."""
        return await (await self.begin_exchange(thread, text, turn_id))()

    async def outcome_by_update(self, thread: str, number: int, seen: set[str],
                                run_id: str | None = None) -> Outcome | None:
        """Turn `number`'s outcome (its reply, or a question not in `seen`) with one call that
        waits for it (durable_teams/client/turn_outcome.py); None when that way cannot tell."""
        try:
            found = await wait_outcome(self.client, thread, number, seen=seen, run_id=run_id)
        except OutcomeUnavailable:
            return None
        if found.reply is not None:
            return Outcome.of(found.reply)
        assert found.question is not None
        return Outcome("question", question_text(found.question))

    async def turn_changes(self, thread: str, number: int, seen: set[str] | None = None
                           ) -> AsyncGenerator[TurnOutcome | None, None]:
        """Yields each time turn `number` of `thread` may stand otherwise, for a caller that
        reads the turn after each and stops once it is settled. First, when the `turn_outcome`
        update tells it, at the turn's outcome (its reply, or a question not in `seen`; None:
        the reply alone): one call the server holds, the outcome it told (a caller may need no
        read). Then (or when the update cannot tell) each time a step of the thread completes,
        at once first: a long poll of its history (durable_teams/client/reply_watch.py), None.
        Ends when the thread stops running. Never a timer."""
        try:
            told = await wait_outcome(self.client, thread, number, seen=seen)
        except OutcomeUnavailable:
            pass
        else:
            yield told
        async with aclosing(history_growth(self.client, thread)) as growth:
            async for _ in growth:
                yield None

    async def _outcome(self, thread: str, seen: set[str], *, target_turn: int | None,
                       turn: asyncio.Future[TurnReply] | None) -> Outcome:
        """The exchange's outcome: by the update when it can tell, else read from the thread's
        state each time a step of it completes (the way of a worker without the update)."""
        if target_turn is not None:
            waited = await self.outcome_by_update(thread, target_turn, seen)
            if waited is not None:
                return waited
        async with aclosing(history_growth(self.client, thread)) as growth:
            await anext(growth, None)  # its first, at once: the state is read next anyway
            while True:
                if turn is not None and turn.done():
                    return Outcome.of(turn.result())
                found = await self._outcome_now(thread, seen, target_turn)
                if found is not None:
                    return found
                if not await _grown(growth, turn):
                    found = await self._outcome_now(thread, seen, target_turn)  # as it ended
                    if found is not None:
                        return found
                    if turn is not None and turn.done():
                        return Outcome.of(turn.result())
                    raise ConversationEnded(f"conversation {thread} stopped before answering")

    async def _outcome_now(self, thread: str, seen: set[str], target_turn: int | None) -> Outcome | None:
        """The exchange's outcome as the thread's state has it now (None: not yet)."""
        status = await self.status(thread)
        last = status.last_reply
        if target_turn is not None and last is not None and last.turn >= target_turn:
            # that turn's own reply, never a later turn's (a message sent right after it)
            return Outcome.of(last if last.turn == target_turn else await self.reply_of(thread, target_turn, last))
        fresh = [q for q in status.pending if q.question_id not in seen]
        if fresh:  # asked before the turn ended: the same turn's question
            return Outcome("question", question_text(fresh[0]))
        return None


async def _grown(growth: AsyncIterator[str], turn: asyncio.Future[TurnReply] | None) -> bool:
    """Wait for the next step of the thread (True) or `turn`'s end (True); False when the
    thread stopped running."""
    step = asyncio.ensure_future(anext(growth))
    try:
        await asyncio.wait([step] + ([turn] if turn is not None else []), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not step.done():
            step.cancel()
            await asyncio.gather(step, return_exceptions=True)
    if step.done() and not step.cancelled() and isinstance(step.exception(), StopAsyncIteration):
        return False
    if step.done() and not step.cancelled() and step.exception() is not None:
        raise step.exception()  # type: ignore[misc]
    return True
