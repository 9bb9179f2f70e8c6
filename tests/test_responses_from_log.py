"""A response as a function of its thread's log (durable_teams/gateway/doors/responses/from_log.py): ids
round-trip, and the events of a running response are a prefix of its final ones."""

from __future__ import annotations

import pytest

from durable_teams.gateway.doors.responses.events import events, numbered
from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse, view_of
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.state import TurnReply

pytestmark = pytest.mark.pure


@pytest.mark.parametrize("thread", ["desk-resp-1", "a.b:c@d=e+f-g_h", "x" * 200])
def test_an_id_names_its_thread_turn_and_place(thread: str) -> None:
    ref = ResponseRef(thread, 3, 41, 2)
    assert ResponseRef.parse(ref.id) == ref


@pytest.mark.parametrize("bad", ["", "resp_", "resp_zz_1_0_0", "resp_61_1_0", "resp_61_-1_0_0", "chatcmpl-1", 7])
def test_an_id_it_never_gave_is_unknown(bad: object) -> None:
    with pytest.raises(UnknownResponse):
        ResponseRef.parse(bad)


def log() -> list[Message]:
    return [Message(role="user", content="Where is it?"),
            Message(role="assistant", name="desk", tool_calls=[ToolCall(id="c1", name="lookup", arguments="{}")]),
            Message(role="tool", name="lookup", tool_call_id="c1", content="shipped"),
            Message(role="assistant", name="desk", content="Shipped."),
            Message(role="user", content="next turn")]


def test_a_running_response_s_events_are_a_prefix_of_its_final_ones() -> None:
    ref = ResponseRef("t", 1, 0)
    so_far = [events(view_of(ref, log()[:n], None, [], set()), "desk", 0) for n in range(1, 5)]
    final = view_of(ref, log(), TurnReply(turn=1, text="Shipped.", agent="desk"), [], set())
    last = events(final, "desk", 0)
    for part in so_far:
        assert last[:len(part)] == part
    assert final.end == 4 and final.text == "Shipped." and [i for i, _ in final.steps] == [1]
    assert [e["sequence_number"] for e in numbered(last, 3)] == list(range(4, len(last)))


def test_an_approval_ends_the_response_once_it_waits() -> None:
    ref = ResponseRef("t", 1, 0)
    messages = [Message(role="user", content="refund"),
                Message(role="assistant", name="desk", tool_calls=[ToolCall(id="c9", name="refund", arguments="{}")])]
    assert not view_of(ref, messages, None, [], {"refund"}).ended  # asked, not yet waiting
    answered = [*messages, Message(role="tool", name="refund", tool_call_id="c9", content="refunded")]
    view = view_of(ref, answered, None, [], {"refund"})
    assert view.ended and view.end == 2 and view.stop is not None and view.stop.approval
