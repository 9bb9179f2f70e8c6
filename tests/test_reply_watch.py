"""The replies query of `reply_watch` is asked again while the server is only busy (the same
patience as sending a turn), and gives up with a typed reason."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import reply_watch
from durable_teams.client.refusals import ConversationBusy
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import TurnReply

pytestmark = pytest.mark.pure

REPLY = TurnReply(turn=1, text="hi", agent="desk", status="completed")


class Handle:
    """A workflow handle whose `turn_replies` query fails with `failures` first."""

    id = "conv-1"

    def __init__(self, *failures: RPCStatusCode) -> None:
        self.failures = list(failures)
        self.asked = 0

    async def query(self, query: Any, numbers: list[int]) -> list[TurnReply]:
        assert (query, numbers) == (TeamWorkflow.turn_replies, [1])
        self.asked += 1
        if self.failures:
            raise RPCError("busy", self.failures.pop(0), b"")
        return [REPLY]


async def test_the_query_is_asked_again_while_the_server_is_busy() -> None:
    handle = Handle(RPCStatusCode.UNAVAILABLE, RPCStatusCode.RESOURCE_EXHAUSTED)
    assert await reply_watch.ask_replies(handle, [1]) == [REPLY]  # type: ignore[arg-type]
    assert handle.asked == 3


async def test_any_other_refusal_is_raised_at_once() -> None:
    handle = Handle(RPCStatusCode.PERMISSION_DENIED)
    with pytest.raises(RPCError):
        await reply_watch.ask_replies(handle, [1])  # type: ignore[arg-type]
    assert handle.asked == 1


async def test_a_server_busy_for_longer_than_the_patience_is_a_typed_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reply_watch, "ASK_PATIENCE", 0.2)
    handle = Handle(*[RPCStatusCode.UNAVAILABLE] * 1000)
    with pytest.raises(ConversationBusy, match="conv-1"):
        await reply_watch.ask_replies(handle, [1])  # type: ignore[arg-type]
    assert 1 < handle.asked < 1000
