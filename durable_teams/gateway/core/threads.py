"""What the gateway asks of Temporal: start a thread, tell whether it runs and whether a
caller may see it, list the questions waiting. Running a turn, answering a question and
waiting for an outcome are durable_teams/gateway/core/exchanges.py, reading a thread's log
durable_teams/gateway/core/thread_log.py: two parts a `Gateway` holds (`exchanges`, `log`) and
whose methods the doors call through it (`gateway.status(thread)`).

Nothing is kept in the gateway between requests: a thread is its workflow id, a turn in
flight lives in the workflow, and the events are read from the workflow's log.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from starlette.exceptions import HTTPException
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationEnded, ConversationNotFound
from durable_teams.client.server_state import (
    CHAT_MEMO,
    waiting_conversations,
    why_it_failed,
    workers_soon,
)
from durable_teams.client.start import start_conversation
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core.exchanges import Exchanges
from durable_teams.gateway.core.scopes import sees
from durable_teams.gateway.core.tenant_ids import workflow_id
from durable_teams.gateway.core.thread_log import ThreadLog
from durable_teams.live.hub import LIVE, LiveHub
from durable_teams.workflows.labels import TEAM
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput

__all__ = ["Gateway", "NoWorker", "TeamMismatch", "UnknownTeam"]

WORKER_SEEN_SECONDS = 5.0
log = logging.getLogger(__name__)


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


P = ParamSpec("P")
R = TypeVar("R")


class Forward(Generic[P, R]):
    """A method of one of the gateway's parts, called through the gateway: `gateway.status(t)`
    is `gateway.exchanges.status(t)`, with the same signature for type checkers."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part, self.name, self.method = part, method.__name__, method

    def __get__(self, gateway: Gateway | None, owner: type | None = None) -> Callable[P, R]:
        if gateway is None:  # read on the class (help(Gateway), a mock's spec): the part's own
            return self.method  # type: ignore[return-value]
        method: Callable[P, R] = getattr(getattr(gateway, self.part), self.name)
        return method


@dataclass
class Gateway:
    """The client and where new threads run; its parts: `log` (reading a thread's log) and
    `exchanges` (turns, answers and their outcomes)."""

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
    """A chat thread's first answer ends with its mark (durable_teams/gateway/core/thread_marks.py)."""
    worker_seen_at: float = float("-inf")
    live_responses: bool = False
    """Responses API streams carry live text deltas (deltas cross processes: a broker is
    configured, durable_teams/gateway/doors/responses/live.py)."""
    log: ThreadLog = field(init=False, repr=False)
    exchanges: Exchanges = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.log = ThreadLog(self.client, self.hub, self.poll_seconds)
        self.exchanges = Exchanges(self.client, self.hub, self.log, self.raise_unless_running,
                                   self.busy_seconds, self.poll_seconds)

    # what the doors call, held by the parts
    log_total = Forward("log", ThreadLog.log_total)
    latest_said = Forward("log", ThreadLog.latest_said)
    turn_start = Forward("log", ThreadLog.turn_start)
    turn_messages = Forward("log", ThreadLog.turn_messages)
    page = Forward("log", ThreadLog._page)
    turn_events = Forward("log", ThreadLog.turn_events)
    until_news = Forward("log", ThreadLog.until_news)
    accept_turn = Forward("exchanges", Exchanges.accept_turn)
    subscribed = Forward("exchanges", Exchanges.subscribed)
    patiently = Forward("exchanges", Exchanges.patiently)
    status = Forward("exchanges", Exchanges.status)
    reply = Forward("exchanges", Exchanges.reply)
    approval_in_words = Forward("exchanges", Exchanges.approval_in_words)
    begin_exchange = Forward("exchanges", Exchanges.begin_exchange)
    turn_of = Forward("exchanges", Exchanges.turn_of)
    reply_of = Forward("exchanges", Exchanges.reply_of)
    converse = Forward("exchanges", Exchanges.converse)
    outcome_by_update = Forward("exchanges", Exchanges.outcome_by_update)
    turn_changes = Forward("exchanges", Exchanges.turn_changes)

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
                           memo: Mapping[str, str] | None = None, user: str | None = None,
                           history: list[Message] | None = None,
                           idle_close_seconds: float | None = None, scope: str | None = None) -> str:
        """Start a conversation of `team` under `thread` (a new id when None: `<scope>:<team>-<hex>`
        for a scoped caller, shown to it without the prefix). The team's name
        is kept in the memo so the inbox can show it without a worker, and so is `memo` (a keyed
        request's claim: durable_teams/gateway/core/idempotency.py). `history`:
        messages it opens with (its first turn still comes as a turn); `idle_close_seconds`
        marks a chat's thread: closed when the chat goes quiet, its questions kept out of the
        inbox (they are answered in the chat). `scope`: the scoped token's name whose callers
        alone (besides operators) see the thread (durable_teams/gateway/core/scopes.py). The scope is
        the conversation's tenant and `user` the end user it speaks for, in its context
        variables (docs/architecture.md, "Tenants and users")."""
        # a new id of its own: a tenant's, like one it chooses (core/tenant_ids.py), named without
        # the prefix in answers, so it is found with one describe
        thread = thread or workflow_id(scope, f"{team_part(team)}-{uuid.uuid4().hex[:12]}")
        kept: dict[str, object] = {"team": team, **(memo or {})}
        kept |= ({"user": user} if user else {}) | ({CHAT_MEMO: True} if idle_close_seconds else {})
        inp = ConversationInput(team_name=team, task=task, single_turn=task is not None,
                                history=history or [], answer_history=False,
                                idle_close_seconds=idle_close_seconds)
        # never a second run under an id whose first has ended (Temporal's default allows one):
        # a retried request with a task would run it again
        await start_conversation(self.client, team, inp, tenant=scope, user=user, id=thread,
                                 task_queue=self.task_queue, memo=kept,
                                 id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        return thread

    async def keyed_by_another_team(self, team: str, keyed: str, kind: str = "") -> str | None:
        """The thread an Idempotency-Key (`keyed`: the caller's, hashed) started for another of
        the served teams, if any (a keyed thread's id is the team, `kind` and the key: another
        team's would get a thread of its own)."""
        for other in self.teams or []:
            if other == team:
                continue
            thread = f"{team_part(other)}-{kind}{keyed[:16]}"
            try:
                memo = await self.memo(thread)
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    continue
                raise
            if memo.get("idempotency") == keyed:
                return thread
        return None

    async def memo(self, thread: str) -> Mapping[str, Any]:
        """The thread's memo: its team, and the idempotency key (hashed) of the request that
        started it, if any."""
        described = await self.client.get_workflow_handle(thread).describe()
        return await described.memo()
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

    async def running(self, thread: str, team: str | None = None, scope: str | None = None,
                      described: WorkflowExecutionDescription | None = None) -> bool:
        """True when the thread's workflow runs; False when no such thread. Raises
        `ConversationNotFound` for a thread a caller of `scope` may not see,
        `ConversationEnded` for an ended thread, `TeamMismatch` for another team's thread.
        `described`: the thread as described already (no second describe)."""
        return await self.running_described(thread, team, scope, described) is not None

    async def running_described(self, thread: str, team: str | None = None, scope: str | None = None,
                                described: WorkflowExecutionDescription | None = None
                                ) -> WorkflowExecutionDescription | None:
        """`running`, with the running thread's description (None: no such thread)."""
        if described is None:
            try:
                described = await self.client.get_workflow_handle(thread).describe()
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    return None
                raise
        if not await self._sees(scope, described):
            raise ConversationNotFound(f"no thread {thread}")
        if described.status != WorkflowExecutionStatus.RUNNING:
            state = described.status.name if described.status else "closed"
            raise ConversationEnded(f"thread {thread} has ended ({state}){await why_it_failed(self.client, thread)}")
        # a thread started before clients put the team in the memo: the workflow's Team label
        owner = (await described.memo()).get("team") or described.typed_search_attributes.get(TEAM)
        if team is not None and owner is not None and owner != team:
            raise TeamMismatch(f"thread {thread} belongs to team {owner!r}, not {team!r}")
        return described

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
    async def raise_unless_running(self, thread: str) -> None:
        """`ConversationEnded` (409) for a thread that has ended, `ConversationNotFound` (404)
        for no such thread; returns when it runs. For a write the server refused as NOT_FOUND,
        which it says of a workflow that ended as well as of one that never was."""
        if not await self.running(thread):
            raise ConversationNotFound(f"no thread {thread}")
