"""One idempotency mechanism for every door and every kind of input (turn, answer, fork,
start): a request is kept to one run by what Temporal guarantees, never by the gateway.

A request under a key (an `Idempotency-Key`, an A2A `messageId`, or an id derived from the
request itself when the caller gives none) stands for one request: the key is the caller's
own (`caller_key`: two callers' equal keys never meet) and the request's content is a digest.
It reaches Temporal one of two ways, each atomic there:

- **A workflow the request starts** (a thread, a fork; for a request whose thread is found by
  its content, the key's record): started under an id derived from the key, with the key and
  the digest in its memo, never a second run under that id (`REJECT_DUPLICATE`). Taking the id
  is the claim: `start_once` starts it, or tells the same request sent again (a retry: the
  first outcome) from another request under the key (`KeyReused`, 409). The key's record is
  for the chat door's resent history and the Responses API's resent conversation alone: their
  threads' ids begin with the conversation's family (how the next request finds its thread),
  so none can be named after the key, and a late retry of a request that continued a thread
  found by its history has nothing else to find that thread by.
- **An input into a running thread** (a turn, an answer): sent under an input id of the key
  and the digest (`content_id`), by an update named after the key alone (`KeyedInput.prefix`;
  `keyed_update_id` in durable_teams/client/send.py, a turn's and an answer's alike), so
  Temporal runs one of the requests under the key sent at once, whatever its content: the
  first to reach it is taken, the others are handed its result (Temporal knows an update's id
  for the run it went to). The workflow keeps the input ids it took (`inputs_taken`, across
  continue-as-new and after it ended; a turn's for its latest 200 turns, an answer's for its
  latest 50): before sending, `input_taken` tells a retry (its turn) from another request
  under the key however late; after, `sent_keyed` tells the request whose twin was taken
  (`KeyReused`). Temporal knows an update id within one run: a twin that reaches the next
  run after a continue-as-new is refused by the workflow itself (its validators refuse an
  input under a key it took another input under: workflows/intake.py, `_key_used`). Requests of an earlier release named the update by the
  input id; their retries are found by the input id, which is unchanged.

Each door renders `KeyReused` as its protocol's error (409 `idempotency_key_reused`; A2A's
invalid params)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, NamedTuple, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import TurnConflict
from durable_teams.gateway.core.threads import Gateway
from durable_teams.workflows.conversation import TeamWorkflow

__all__ = ["Claim", "KeyReused", "KeyedInput", "caller_key", "claim_record", "content_id", "digest_of",
           "input_id", "input_kept", "input_taken", "sent_keyed", "recorded", "start_once", "taken", "taken_soon"]

T = TypeVar("T")


class KeyReused(HTTPException):
    """409: the key was used with another request (on this thread, when there is one).
    `memo`: the memo of the workflow the key started, when it started one."""

    kind = "idempotency_key_reused"

    def __init__(self, thread: str | None = None, memo: Mapping[str, Any] | None = None) -> None:
        where = f" on thread {thread}" if thread else ""  # None: a route whose request names no thread
        super().__init__(409, f"this Idempotency-Key was used for another request{where} "
                              "(other content): use a new key")
        self.memo: Mapping[str, Any] = memo or {}


def caller_key(request: Request, key: str) -> str:
    """An Idempotency-Key as this caller's own (two callers' equal keys never meet)."""
    caller = getattr(request.state, "caller", "") or ""
    return hashlib.sha256(f"{caller}\0{key}".encode()).hexdigest()[:32]


def digest_of(*content: str) -> str:
    """The digest a request's content is compared by."""
    return hashlib.sha256("\0".join(content).encode()).hexdigest()


def input_id(*parts: str) -> str:
    """An input named by what it is (the thread, the door, the request): the same request sent
    again goes in under the same id, for a caller that gives no key."""
    return f"named-{digest_of(*parts)[:32]}"


# ---- inputs into a running thread --------------------------------------------------------------

def content_id(prefix: str, *content: str) -> str:
    """`prefix` (the key's part, which ends with no dot) and a digest of the request's content."""
    return f"{prefix}.{digest_of(*content)[:16]}"


class KeyedInput(NamedTuple):
    """The id a keyed request goes in under, the turn of the thread that took it already (None:
    a new input), and the key it was sent under (`prefix`: the update's name)."""

    id: str
    turn: int | None
    prefix: str


async def input_taken(client: Client, thread: str, prefix: str, *content: str) -> KeyedInput:
    """The input of a request under the key `prefix` stands for; `KeyReused` when the thread
    took another request under it. A worker without the query (an older release): every
    keyed request is taken as new, as before."""
    wanted = content_id(prefix, *content)
    try:
        taken = await client.get_workflow_handle(thread).query(TeamWorkflow.inputs_taken, f"{prefix}.")
    except WorkflowQueryFailedError:  # "unknown query type": a worker of an earlier release
        return KeyedInput(wanted, None, prefix)
    if not isinstance(taken, dict) or not taken:
        return KeyedInput(wanted, None, prefix)
    if wanted not in taken:
        raise KeyReused(thread)
    turn = taken[wanted]
    return KeyedInput(wanted, turn if isinstance(turn, int) else None, prefix)


async def sent_keyed(client: Client, thread: str, keyed: KeyedInput, send: Callable[[], Awaitable[T]]) -> T:
    """`send()` the keyed input (under the update its key names), then `input_kept`; a twin
    taken under the key as another kind of input (an answer for this turn: `TurnConflict`) is
    `KeyReused` too."""
    try:
        sent = await send()
    except TurnConflict:
        await input_kept(client, thread, keyed)
        raise
    await input_kept(client, thread, keyed)
    return sent


async def input_kept(client: Client, thread: str, keyed: KeyedInput) -> None:
    """After a keyed input was sent (under the update named by its key alone,
    `KeyedInput.prefix`): `KeyReused` when the thread took another request's input under the
    key instead. Two requests under one key sent at once are one update to Temporal, whatever
    their content: the first to reach it runs, the other is handed its result, and only the
    record of what the thread took (`inputs_taken`) tells whose it was."""
    try:
        taken = await client.get_workflow_handle(thread).query(TeamWorkflow.inputs_taken, f"{keyed.prefix}.")
    except WorkflowQueryFailedError:  # a worker of an earlier release: no record to tell by
        return
    if isinstance(taken, dict) and taken and keyed.id not in taken:
        raise KeyReused(thread)


async def taken(gw: Gateway, thread: str, input_id: str) -> int | None:
    """The turn `thread` took the input `input_id` in (or answered with it), None when it did
    not (or there is no such thread)."""
    try:
        return await gw.turn_of(thread, input_id)
    except (RPCError, WorkflowQueryFailedError):
        return None


async def taken_soon(gw: Gateway, thread: str, input_id: str) -> int | None:
    """`taken`, waiting up to `busy_seconds` for the request that started `thread` a moment ago
    to send its input (never sent twice at once: the second would answer the first's question)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gw.busy_seconds
    while True:
        number = await taken(gw, thread, input_id)
        if number is not None or loop.time() >= deadline:
            return number
        await asyncio.sleep(gw.poll_seconds)  # the workflow's state, polled as `_outcome` does


# ---- workflows a request starts ----------------------------------------------------------------

class Claim(NamedTuple):
    """A keyed request that starts a workflow: the caller's key (hashed) and its content's digest,
    kept in the memo of the workflow it starts."""

    keyed: str
    request: str

    def memo(self) -> dict[str, str]:
        return {"idempotency": self.keyed, "request": self.request}


async def memo_of(client: Client, workflow_id: str) -> Mapping[str, Any]:
    return await (await client.get_workflow_handle(workflow_id).describe()).memo()


async def start_once(client: Client, workflow_id: str, claim: Claim,
                     start: Callable[[dict[str, str]], Awaitable[object]]) -> bool:
    """`start(memo)`: start `workflow_id` with the claim in its memo (never a second run under
    the id). True when this request started it; False when the same request did before (a
    retry: read its outcome); `KeyReused` (with the memo) when the key started it for another
    request. `WorkflowAlreadyStartedError` again when the id is taken by a workflow no request
    under this key started."""
    try:
        await start(claim.memo())
        return True
    except WorkflowAlreadyStartedError:
        memo = await memo_of(client, workflow_id)
        if memo.get("idempotency") != claim.keyed:
            raise
        if memo.get("request") != claim.request:
            raise KeyReused(memo=memo) from None
        return False


# ---- the key's record, for a request whose thread is found by its content -------------------------

RECORD_TYPE = "DurableTeamsKeyRecord"
"""The record's workflow type: no worker runs it (its task queue is `<queue>.key-records`,
which no worker polls, and it is terminated as soon as it is started)."""
BACKSTOP = timedelta(minutes=1)
"""A record left running (the gateway stopped between start and terminate) times out."""


class KeyRecord(NamedTuple):
    """What the first request under a key was (`request`: its content's digest) and where it
    went (`thread`)."""

    request: str
    thread: str


def record_id(route: str, keyed: str) -> str:
    return f"idempotency-{route}-{keyed}"


async def recorded(client: Client, route: str, keyed: str, request: str) -> KeyRecord | None:
    """The key's record on `route` when it is this request's (a retry), None when no request
    used the key (or its record outlived retention); `KeyReused` when another request did."""
    try:
        memo = await memo_of(client, record_id(route, keyed))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if str(memo.get("request", "")) != request:
        raise KeyReused()  # not the first request's thread: the request did not name it
    return KeyRecord(request, str(memo.get("thread", "")))


async def claim_record(client: Client, task_queue: str, route: str, keyed: str, request: str,
                       thread: str) -> None:
    """Records that the key stands for `request`, going to `thread` (`start_once` on the key's
    record: a workflow that never runs, terminated at once, its memo kept for the namespace's
    retention), unless a request under the key came first: the same request goes on, another
    is `KeyReused`. A request that names no thread has no thread to claim the key in."""
    rid = record_id(route, keyed)

    async def start(memo: dict[str, str]) -> None:
        handle = await client.start_workflow(
            RECORD_TYPE, id=rid, task_queue=f"{task_queue}.key-records", memo=memo | {"thread": thread},
            execution_timeout=BACKSTOP, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        try:
            await handle.terminate("an Idempotency-Key's record: nothing to run")
        except RPCError:  # ended meanwhile (its backstop): the memo is kept either way
            pass
    try:
        await start_once(client, rid, Claim(keyed, request), start)
    except WorkflowAlreadyStartedError:  # a record of an earlier release (no key in its memo)
        await recorded(client, route, keyed, request)
