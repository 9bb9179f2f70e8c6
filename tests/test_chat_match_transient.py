"""A resent chat history whose thread cannot be read for a moment (a query timed out under
load, the server briefly away) is matched once it can be, never taken for "no such thread": a
late retry then opened a new thread and ran its request a second time
(durable_teams/gateway/core/resent_threads.py). A thread that is not there is still no match."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationBusy
from durable_teams.gateway.core import resent_history as chat_history
from durable_teams.gateway.core import resent_threads as chat_threads
from durable_teams.gateway.core.thread_marks import mark_line
from durable_teams.workflows.conversation_reads import ConversationStatus

pytestmark = pytest.mark.pure

KEY = chat_history.ChatKey("", "desk")
MARK = "0123456789ab"
HISTORY = chat_history.chat_history([{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": f"yo{mark_line('x-' + MARK)}"},
                                     {"role": "user", "content": "Order 7"}])
THREAD = chat_history.family(KEY, "hi") + MARK
TIMED_OUT = RPCError("context deadline exceeded", RPCStatusCode.DEADLINE_EXCEEDED, b"")


def took_it() -> ConversationStatus:
    """The thread as it stands after taking this very request."""
    return ConversationStatus(active_agent="desk", turns=1, model_calls=1, pending=[], queued_turns=0,
                              last_reply=None, closed=False,
                              last_input_id=chat_history.request_keys(KEY, HISTORY).this)


class Thread:
    """A stand-in gateway: its status query fails with `errors` in turn, then answers."""

    def __init__(self, *errors: Exception, busy_seconds: float = 5.0) -> None:
        self.errors, self.asked, self.busy_seconds = list(errors), [], busy_seconds

    async def status(self, thread: str) -> ConversationStatus:
        self.asked.append(thread)
        if self.errors:
            raise self.errors.pop(0)
        return took_it()

    async def turn_of(self, thread: str, turn_id: str) -> int | None:
        raise RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")  # asked only when no status fits


async def find(gw: Any) -> chat_threads.Match | None:
    return await chat_threads.find_thread(gw, KEY, HISTORY, retry=True)


async def test_a_thread_that_timed_out_for_a_moment_is_this_requests_thread() -> None:
    gw = Thread(TIMED_OUT, RPCError("unavailable", RPCStatusCode.UNAVAILABLE, b""))
    found = await find(gw)
    assert found is not None and (found.thread, found.again) == (THREAD, True)
    assert gw.asked == [THREAD] * 3


async def test_a_thread_that_stays_unreadable_is_a_429_not_a_new_thread() -> None:
    gw = Thread(*[TIMED_OUT] * 100, busy_seconds=0.3)
    with pytest.raises(ConversationBusy, match="context deadline exceeded"):
        await find(gw)


async def test_a_thread_that_is_not_there_is_no_match() -> None:
    gw = Thread(*[RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")] * 3)
    assert await find(gw) is None and gw.asked == [THREAD]
