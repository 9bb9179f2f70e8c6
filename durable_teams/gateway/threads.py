"""What the gateway asks of Temporal: start a thread, run a turn while reading its events,
list and answer questions, and wait for a turn's outcome (a reply or a new question).

Nothing is kept in the gateway between requests: a thread is its workflow id, a turn in
flight lives in the workflow, and the events are read from the workflow's log (that half is
durable_teams/gateway/thread_log.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from starlette.exceptions import HTTPException
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.client.refusals import (
    ConversationBusy,
    ConversationEnded,
    ConversationNotFound,
    Patience,
    QuestionClosed,
    TurnConflict,
)
from durable_teams.client.send import AcceptedTurn, send_reply, submit_turn
from durable_teams.client.server_state import (
    CHAT_MEMO,
    questions_of,
    waiting_conversations,
    why_it_failed,
    workers_soon,
)
from durable_teams.client.start import start_conversation
from durable_teams.gateway.requests import BadRequest
from durable_teams.gateway.scopes import SCOPE_MEMO, sees
from durable_teams.gateway.thread_log import ThreadLog, background
from durable_teams.live.hub import LIVE, Delta, LiveHub
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import (
    ConversationInput,
    ConversationStatus,
    TurnReply,
)
from durable_teams.workflows.turn_view import answering, question_text
from durable_teams.workflows.usage import Tally

T = TypeVar("T")
WORKER_SEEN_SECONDS = 5.0
log = logging.getLogger(__name__)


class Outcome(NamedTuple):
    """What an exchange ends with: a "reply", a "question", or "failed" (the text says why),
    with the turn's tokens when it ended (none for a question: the turn goes on)."""

    kind: str
    text: str
    usage: Tally | None = None
    finish_reason: str = "stop"
    """OpenAI's: "length" when a model call of the turn was cut at its token limit,
    "content_filter" when the endpoint's filter cut it."""

    @classmethod
    def of(cls, reply: TurnReply) -> Outcome:
        finish = {"truncated": "length", "filtered": "content_filter"}.get(reply.status, "stop")
        return cls("failed" if reply.status == "failed" else "reply", reply.text, reply.usage, finish)


class NoWorker(HTTPException):
    """503: no worker polls the gateway's task queue, so a chat would wait without an answer."""

    kind = "no_worker"

    def __init__(self, task_queue: str) -> None:
        super().__init__(503, f"no worker is polling task queue {task_queue!r}: start one "
                              "(durable-teams worker), then send this again", {"Retry-After": "5"})


class TeamMismatch(ValueError):
    """A request names a thread of another team than its `model`."""


class UnknownTeam(LookupError):
    """A request names a team the workers do not serve."""


@dataclass
class Gateway(ThreadLog):
    """The client and where new threads run."""

    client: Client
    task_queue: str
    poll_seconds: float = 0.1
    hub: LiveHub = field(default_factory=lambda: LIVE)
    """Where live text deltas come from (durable_teams/live/hub.py)."""
    teams: list[str] | None = None
    """The teams the workers serve, when known (`serve --team`)."""
    busy_seconds: float = 10.0
    """How long a turn waits while its thread has 10 turns in flight (then 429)."""
    chat_idle_seconds: float = 3600.0
    """A chat's thread (no `X-Thread-Id`) closes after this long without a message."""
    chat_lookup_seconds: float = 1.0
    """How long a resent history waits for the visibility store to list its thread."""
    chat_marks: bool = True
    """A chat thread's first answer ends with its mark (durable_teams/gateway/chat_marks.py)."""
    worker_seen_at: float = float("-inf")
    live_responses: bool = False
    """Responses API streams carry live text deltas (deltas cross processes: a broker is
    configured, durable_teams/gateway/responses_live.py)."""

    async def require_worker(self) -> None:
        """`NoWorker` (503) unless a worker polled the task queue lately (a seen worker is
        trusted for `WORKER_SEEN_SECONDS`: one lookup per few seconds, not per request)."""
        now = time.monotonic()
        if now - self.worker_seen_at < WORKER_SEEN_SECONDS:
            return
        if not await workers_soon(self.client, self.task_queue):
            raise NoWorker(self.task_queue)
        self.worker_seen_at = now

    def check_team(self, team: str) -> None:
        """Raises `UnknownTeam` for a team the workers do not serve (when that is known)."""
        if self.teams is not None and team not in self.teams:
            raise UnknownTeam(f"no team {team!r} here (teams: {', '.join(self.teams) or 'none'})")

    async def start_thread(self, team: str, thread: str | None = None, task: str | None = None,
                           idempotency: str | None = None, request_digest: str | None = None,
                           user: str | None = None,
                           history: list[Message] | None = None,
                           idle_close_seconds: float | None = None, scope: str | None = None) -> str:
        """Start a conversation of `team` under `thread` (a new id when None). The team's name
        is kept in the memo so the inbox can show it without a worker, and so is the request's
        idempotency key (hashed), so the same request sent again finds its thread. `history`:
        messages it opens with (its first turn still comes as a turn); `idle_close_seconds`
        marks a chat's thread: closed when the chat goes quiet, its questions kept out of the
        inbox (they are answered in the chat). `scope`: the scoped token's name whose callers
        alone (besides operators) see the thread (durable_teams/gateway/scopes.py)."""
        thread = thread or f"{team}-{uuid.uuid4().hex[:12]}"
        memo = ({SCOPE_MEMO: scope} if scope else {}) | {"team": team} | ({"idempotency": idempotency} if idempotency else {}) | (
            {"request": request_digest} if request_digest else {}) | (
            {"user": user} if user else {}) | ({CHAT_MEMO: True} if idle_close_seconds else {})
        inp = ConversationInput(team_name=team, task=task, single_turn=task is not None,
                                history=history or [], answer_history=False,
                                idle_close_seconds=idle_close_seconds)
        # never a second run under an id whose first has ended (Temporal's default allows one):
        # a retried request with a task would run it again
        await start_conversation(self.client, team, inp, id=thread, task_queue=self.task_queue, memo=memo,
                                 id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        return thread

    async def keyed_by_another_team(self, team: str, keyed: str) -> str | None:
        """The thread an Idempotency-Key (`keyed`: the caller's, hashed) started for another of
        the served teams, if any (a keyed thread's id is the team and the key: another team's
        would get a thread of its own)."""
        for other in self.teams or []:
            if other == team:
                continue
            try:
                memo = await self.memo(f"{other}-{keyed[:16]}")
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    continue
                raise
            if memo.get("idempotency") == keyed:
                return f"{other}-{keyed[:16]}"
        return None

    async def memo(self, thread: str) -> Mapping[str, Any]:
        """The thread's memo: its team, and the idempotency key (hashed) of the request that
        started it, if any."""
        described = await self.client.get_workflow_handle(thread).describe()
        return await described.memo()

    async def accept_turn(self, thread: str, text: str, sender: str | None, turn_id: str | None,
                          patience: Patience | None = None, again: int | None = None) -> tuple[int, AcceptedTurn]:
        """Send a turn and return once the workflow has accepted it, with the log index its
        events start from (a `turn_id` sent again is the same turn: `again`, its number, when
        known, and its events from its start, the question it waits on included)."""
        patience = patience or Patience(thread, self.busy_seconds)  # one budget for the whole request
        index = None
        if again is not None:
            index = await self.turn_start(thread, again, answering(await self.status(thread)))
        if index is None:
            index = await self.patiently(lambda: self.log_total(thread), patience)
        accepted = await submit_turn(self.client, thread, text, sender=sender, turn_id=turn_id,
                                     patience=patience)
        return index, accepted

    async def subscribed(self, thread: str, send: Callable[[], Awaitable[T]]
                         ) -> tuple[T, AbstractAsyncContextManager[asyncio.Queue[Delta]], asyncio.Queue[Delta]]:
        """`send()` with the thread's live deltas subscribed first, so a fast model's first
        words are not missed. The subscription is the caller's to close (closed here if `send`
        fails)."""
        subscription = self.hub.subscribe(thread)
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

    async def visible(self, thread: str, scope: str | None) -> WorkflowExecutionDescription:
        """The thread as described, if a caller of `scope` (None: an operator) may see it;
        else `ConversationNotFound`, the same for another scope's thread as for no thread
        (one describe either way: the same answer in the same time)."""
        try:
            described = await self.client.get_workflow_handle(thread).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                raise ConversationNotFound(f"no thread {thread}") from None
            raise
        if not await self._sees(scope, described):
            raise ConversationNotFound(f"no thread {thread}")
        return described

    @staticmethod
    async def _sees(scope: str | None, described: WorkflowExecutionDescription) -> bool:
        """Whether a caller of `scope` sees the thread (an operator: without reading the memo;
        a memo this gateway cannot read is no scope's)."""
        if scope is None:
            return True
        try:
            return sees(scope, await described.memo())
        except Exception:  # noqa: BLE001 - encrypted under another key, say: not the caller's
            return False

    async def running(self, thread: str, team: str | None = None, scope: str | None = None) -> bool:
        """True when the thread's workflow runs; False when no such thread. Raises
        `ConversationNotFound` for a thread a caller of `scope` may not see,
        `ConversationEnded` for an ended thread, `TeamMismatch` for another team's thread."""
        try:
            described = await self.client.get_workflow_handle(thread).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        if not await self._sees(scope, described):
            raise ConversationNotFound(f"no thread {thread}")
        if described.status != WorkflowExecutionStatus.RUNNING:
            state = described.status.name if described.status else "closed"
            raise ConversationEnded(f"thread {thread} has ended ({state}){await why_it_failed(self.client, thread)}")
        owner = (await described.memo()).get("team")
        if team is not None and owner is not None and owner != team:
            raise TeamMismatch(f"thread {thread} belongs to team {owner!r}, not {team!r}")
        return True

    async def status(self, thread: str) -> ConversationStatus:
        return await self.client.get_workflow_handle(thread).query(TeamWorkflow.status)

    async def pending(self, scope: str | None = None) -> list[dict[str, Any]]:
        """Every question waiting for a person, across the threads a caller of `scope` sees
        (None: all), with its thread and team."""
        found: list[dict[str, Any]] = []
        unreadable: list[tuple[str, str]] = []  # one conversation this gateway cannot read hides no other
        # kept in the memo: no worker (nor the AwaitingHuman search attribute) needed to list them
        async for thread_id, memo, questions in waiting_conversations(self.client, unreadable=unreadable):
            if not sees(scope, memo):
                continue
            for q in questions:
                found.append({"thread_id": thread_id, "team": memo.get("team"), **q.model_dump(mode="json")})
        for thread_id, why in unreadable:
            log.warning("inbox: the questions of %s cannot be read here: %s", thread_id, why)
        return found

    async def reply(self, thread: str, question_id: str | None, **reply: Any) -> str:
        """Answer a question; `ConversationBusy` (429) when no worker takes the answer within
        `busy_seconds` (the update waits for one: workers being redeployed, say)."""
        try:
            return await asyncio.wait_for(send_reply(self.client, thread, question_id, **reply),
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

    async def raise_unless_running(self, thread: str) -> None:
        """`ConversationEnded` (409) for a thread that has ended, `ConversationNotFound` (404)
        for no such thread; returns when it runs. For a write the server refused as NOT_FOUND,
        which it says of a workflow that ended as well as of one that never was."""
        if not await self.running(thread):
            raise ConversationNotFound(f"no thread {thread}")

    async def begin_exchange(self, thread: str, text: str, turn_id: str | None = None,
                             max_tokens: int | None = None, *, seen: ConversationStatus | None = None,
                             again: bool = False, turn: int | None = None) -> Callable[[], Awaitable[Outcome]]:
        """One OpenAI-style exchange, started: `text` answers the thread's open question, or
        is sent as a turn (accepted by the workflow before this returns, so the caller may
        acknowledge it), under the input id `turn_id`. Returns what waits for the outcome:
        (kind, text), kind "reply", "question" or "failed" (the turn failed: the text says why).

        `seen`: the thread as the caller found it; the text then goes in only if the thread is
        still there (its question open, no other turn since), else `TurnConflict`. `again`: the
        thread took this very input already (a retry): nothing is sent, its outcome (that of
        `turn` when known) is awaited."""
        status = seen or await self.status(thread)
        if again:  # the turn it started, or the turn whose question it answered
            number = turn or (await self.turn_of(thread, turn_id) if turn_id else None)
            return lambda: self._outcome(thread, set(), target_turn=number or answering(status), turn=None)
        ids = "last_input_id" in status.model_fields_set  # a worker that records input ids
        seen_ids = {q.question_id for q in status.pending}
        if status.pending:
            q = status.pending[0]
            answer: dict[str, Any] = {"text": text} | ({"input_id": turn_id} if ids and turn_id else {})
            if q.kind == "approval":
                approved = approval_of(text)
                if approved is None:  # unclear: ask again, never take it as a denial
                    return lambda: _now(Outcome("question", f"{ask_again(q.tool or q.agent)} "
                                         f"{question_text(q)}"))
                answer["approved"] = approved
            try:
                await self.reply(thread, q.question_id, **answer)
            except QuestionClosed as closed:
                if seen is not None:  # another request answered it since the caller looked
                    raise TurnConflict(f"{thread}: {closed}") from None
                raise
            return lambda: self._outcome(thread, seen_ids, target_turn=answering(status), turn=None)
        accepted = await submit_turn(self.client, thread, text, turn_id=turn_id,
                                     busy_timeout=self.busy_seconds, max_tokens=max_tokens,
                                     after_turns=status.turns if seen is not None and ids else None)

        async def outcome() -> Outcome:
            turn = background(accepted.reply())
            try:
                return await self._outcome(thread, seen_ids, target_turn=None, turn=turn)
            finally:
                turn.cancel()  # a question came back: the turn goes on in the workflow
        return outcome

    async def turn_of(self, thread: str, turn_id: str) -> int | None:
        """The turn the thread started for the input `turn_id`, or answered with it (None: unknown)."""
        handle = self.client.get_workflow_handle(thread)
        try:
            number = (await handle.query("inputs_taken", turn_id) or {}).get(turn_id)
        except WorkflowQueryFailedError:  # a worker of an earlier release: turns only
            number = await handle.query("turn_number", turn_id)
        return number if isinstance(number, int) else None

    async def reply_of(self, thread: str, number: int, latest: TurnReply) -> TurnReply:
        """Turn `number`'s reply (the workflow keeps the latest 200); `latest` if gone."""
        replies = await self.client.get_workflow_handle(thread).query(
            "turn_replies", [number], result_type=list[TurnReply])
        return replies[0] if replies else latest

    async def converse(self, thread: str, text: str, turn_id: str | None = None) -> Outcome:
        """`begin_exchange`, then its outcome."""
        return await (await self.begin_exchange(thread, text, turn_id))()

    async def _outcome(self, thread: str, seen: set[str], *, target_turn: int | None,
                       turn: asyncio.Future[TurnReply] | None) -> Outcome:
        while True:
            if turn is not None and turn.done():
                reply = turn.result()
                return Outcome.of(reply)
            status = await self.status(thread)
            last = status.last_reply
            if target_turn is not None and last is not None and last.turn >= target_turn:
                # that turn's own reply, never a later turn's (a message sent right after it)
                return Outcome.of(last if last.turn == target_turn else await self.reply_of(thread, target_turn, last))
            fresh = [q for q in status.pending if q.question_id not in seen]
            if fresh:  # asked before the turn ended: the same turn's question
                return Outcome("question", question_text(fresh[0]))
            if turn is not None:
                await asyncio.wait([turn], timeout=self.poll_seconds)
            else:
                await asyncio.sleep(self.poll_seconds)


async def _now(value: Outcome) -> Outcome:
    return value
