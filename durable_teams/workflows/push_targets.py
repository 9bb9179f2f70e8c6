"""Where an A2A push notification may go, and what counts as news: pure checks shared by the
gateway (when a config is set) and the delivery activity (at each attempt), each resolving
the host itself. Never called by a workflow."""

from __future__ import annotations

import hashlib
import ipaddress
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from .a2a_tasks import TaskState


def signature(found: TaskState) -> str:
    """The state and a digest of its text: a second question of the same task is news too."""
    return f"{found.state}:{hashlib.sha256(found.text.encode()).hexdigest()[:16]}"


def with_cursor(found: TaskState, run: str, event: int) -> str:
    """A push workflow's cursor (`PushInput.last`): the state told last and where it was in the
    conversation's history, run and event id (durable_teams/activities/a2a_push_log.py)."""
    return f"{signature(found)}@{run}/{event}"


def from_the_start() -> str:
    """A cursor before the conversation's history (its run unnamed, event 0): every state of
    the task is told, its first question first (a task, or a run, watched from its start)."""
    return with_cursor(TaskState("SUBMITTED"), "", 0)


def cursor_of(last: str) -> tuple[str, int] | None:
    """(run id, event id) a cursor names; None for one of an earlier release (no place)."""
    _, at, place = last.rpartition("@")
    run, slash, event = place.partition("/")
    if not at or not slash or not event.isdigit():
        return None
    return run, int(event)


IN_FLIGHT = {EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED}
"""A workflow task's own events, which may be dropped with it (their ids given to others)."""


def newest_kept(newest_first: Iterable[HistoryEvent]) -> int:
    """The id of the newest event of a history's newest events (a reverse read of its end) that
    is not a workflow task's in flight; 0 when there is none: where a cursor may point."""
    return next((e.event_id for e in newest_first if e.event_type not in IN_FLIGHT), 0)


def address_refusal(address: str) -> str | None:
    """Why an IP address is no place to deliver to (None: a public one)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for what in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{what}"):
            return what.replace("_", "-")
    if isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10"):
        return "shared"
    return None


def url_refusal(url: str) -> str | None:
    """Why a push URL cannot be used at all, before any lookup (None: it may be)."""
    try:
        parsed = urllib.parse.urlsplit(url)
        parsed.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return "not a URL"
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return "not an http(s) URL with a host"
    if parsed.username or parsed.password:
        return "a URL with credentials in it (use the config's authentication)"
    return None


def host_and_port(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)


def addresses_refusal(host: str, addresses: list[str]) -> str | None:
    """Why a host that resolves to `addresses` is no place to deliver to (None: all public)."""
    for address in addresses:
        why = address_refusal(address)
        if why:
            return f"the host {host!r} is a {why} address (the operator allows public ones only)"
    return None


Resolve = Callable[[str, int], Awaitable[list[str]]]
"""A host and port to its addresses (the caller's I/O; raises OSError when it does not resolve)."""


async def public_refusal(url: str, allow_private: bool, resolve: Resolve) -> str | None:
    """Why `url` may not be a push target now (None: it may), its host resolved by `resolve`:
    the gateway asks when a config is set, the delivery activity before each attempt."""
    refused = url_refusal(url)
    if refused or allow_private:
        return refused
    host, port = host_and_port(url)
    try:
        addresses = await resolve(host, port)
    except OSError:
        return f"the host {host!r} does not resolve"
    return addresses_refusal(host, addresses)
