"""Pages of MCP's `tasks/list` (2025-11-25): the gateway's threads as Temporal's visibility
store lists them, a page at a time, with an opaque `nextCursor` (MCP's pagination).

A cursor is where the next page starts: Temporal's own page token (a position in its order,
not an offset), the run last read on that page and how many entries of it were read. The next
page starts after that run, wherever threads started meanwhile have moved it, so they do not
shift a client's pages (they sort before it: running threads first, newest first). Only when
that run has left the page (it ended, and moved in Temporal's order) does the count place
the next page, and a thread may then be listed twice; none is skipped.

It is opaque to the client and checked when it comes back: a cursor this gateway did not make
is `BadCursor`. It carries no secret and opens nothing: the caller's scope still decides
which threads are listed."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError, RPCStatusCode

PAGE = 50
"""Threads listed per page."""
SCAN = 200
"""Threads one page looks at most (those of other teams and scopes are skipped): a page may
hold fewer than `PAGE` and still have a `nextCursor`."""
FETCH = 100
"""Threads asked of Temporal at a time."""
MAX_CURSOR = 4096
PREFIX = "dt1."


class BadCursor(ValueError):
    """A cursor this gateway did not hand out (or one Temporal no longer takes)."""


@dataclass(frozen=True)
class Cursor:
    token: bytes = b""
    """Temporal's token of the page the next thread is on (empty: its first page)."""
    skip: int = 0
    """Entries of that page already read."""
    last: str = ""
    """The run id read last on that page ("": none)."""

    def encode(self) -> str:
        body = json.dumps({"p": base64.b64encode(self.token).decode(), "i": self.skip, "r": self.last},
                          separators=(",", ":"))
        return PREFIX + base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        if not isinstance(text, str) or len(text) > MAX_CURSOR or not text.startswith(PREFIX):
            raise BadCursor("no such cursor")
        body = text.removeprefix(PREFIX)
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            token = base64.b64decode(fields["p"], validate=True)
            skip, last = fields["i"], fields["r"]
        except (ValueError, TypeError, KeyError, binascii.Error):
            raise BadCursor("no such cursor") from None
        if not isinstance(skip, int) or isinstance(skip, bool) or not 0 <= skip <= FETCH \
                or not isinstance(last, str) or len(last) > 100:
            raise BadCursor("no such cursor")
        return cls(token, skip, last)


Keep = Callable[[WorkflowExecution], Awaitable[bool]]


async def page_of(client: Client, query: str, keep: Keep, cursor: Cursor | None = None,
                  page: int = PAGE, scan: int = SCAN) -> tuple[list[str], Cursor | None]:
    """The ids of the threads `query` lists from `cursor` on that `keep` keeps, at most `page`
    of them after looking at most at `scan`; and where the next page starts (None: no more)."""
    token, skip, last = (cursor.token, cursor.skip, cursor.last) if cursor else (b"", 0, "")
    listed: list[str] = []
    looked = 0
    while True:
        found = client.list_workflows(query, page_size=FETCH, next_page_token=token or None)
        try:
            await found.fetch_next_page()
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT and token:
                raise BadCursor("no such cursor (or one that has expired)") from None
            raise
        entries = found.current_page or []
        runs = [wf.run_id for wf in entries]
        if last in runs:  # where it is now, threads started meanwhile before it
            skip = runs.index(last) + 1
        for index in range(skip, len(entries)):
            if len(listed) >= page or looked >= scan:
                return listed, Cursor(token, index, runs[index - 1] if index else "")
            looked += 1
            if await keep(entries[index]):
                listed.append(entries[index].id)
        if not found.next_page_token:
            return listed, None
        token, skip, last = found.next_page_token, 0, ""
        if len(listed) >= page or looked >= scan:
            return listed, Cursor(token, 0)
