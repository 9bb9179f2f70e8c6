"""An Idempotency-Key's record on the routes where a request does not name its thread: a chat
that resends its history (no `X-Thread-Id`), a Responses request, a fork. The key must stand
for one request there too, however late the retry and after any gateway restart, so its
record is kept by Temporal, not in the gateway: a workflow that never runs, started under an
id of the caller's key (`keyed`) and terminated at once, whose memo holds the digest of the
request's content and the thread it went to. Temporal's id uniqueness makes the first claim
atomic across gateway processes; the record is kept for the namespace's retention.

A key sent again with other content is a 409 (`KeyReused`, as `/turns` answers); with the same
content the route reads the first request's outcome on the recorded thread."""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway.core.keyed import KeyReused

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


async def recorded(client: Client, route: str, keyed: str) -> KeyRecord | None:
    """The key's record on `route`, or None when no request used it (or it outlived retention)."""
    try:
        memo = await (await client.get_workflow_handle(record_id(route, keyed)).describe()).memo()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    return KeyRecord(str(memo.get("request", "")), str(memo.get("thread", "")))


def check(record: KeyRecord | None, request: str) -> KeyRecord | None:
    """`record` when it is this request's (a retry), None when there is none; `KeyReused` (409)
    when the key stood for another request."""
    if record is not None and record.request != request:
        raise KeyReused()  # not the first request's thread: the request did not name it
    return record


async def claim(client: Client, task_queue: str, route: str, keyed: str, request: str,
                thread: str) -> KeyRecord:
    """Records that the key stands for `request`, going to `thread`, unless a request under the
    key came first: its record then (the same request: go on; another: `KeyReused`)."""
    rid = record_id(route, keyed)
    try:
        handle = await client.start_workflow(
            RECORD_TYPE, id=rid, task_queue=f"{task_queue}.key-records",
            memo={"request": request, "thread": thread}, execution_timeout=BACKSTOP,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
    except WorkflowAlreadyStartedError:
        first = check(await recorded(client, route, keyed), request)
        return first or KeyRecord(request, thread)
    try:
        await handle.terminate("an Idempotency-Key's record: nothing to run")
    except RPCError:  # ended meanwhile (its backstop): the memo is kept either way
        pass
    return KeyRecord(request, thread)
