"""Live deltas in one process: published only to the conversation's subscribers, stamped with
the call and attempt, and a retried call first tells subscribers to discard its partial text."""

from __future__ import annotations

from durable_teams.live import Delta, LiveHub, emit, streaming


async def test_a_retried_call_resets_and_deltas_reach_only_their_conversation() -> None:
    hub = LiveHub()
    emit("outside any call: dropped")
    with hub.subscribe("wf-1") as mine, hub.subscribe("wf-2") as other:
        with streaming("wf-1", "desk", "desk:0", 1, hub):
            emit("Hel")
            emit("")  # nothing to send
            emit("lo")
        with streaming("wf-1", "desk", "desk:0", 2, hub):  # the same call, retried
            emit("Hello again")
        got = [mine.get_nowait() for _ in range(mine.qsize())]
        assert other.empty()
    assert got == [
        Delta("wf-1", "desk", "desk:0", 1, "Hel"), Delta("wf-1", "desk", "desk:0", 1, "lo"),
        Delta("wf-1", "desk", "desk:0", 2, reset=True), Delta("wf-1", "desk", "desk:0", 2, "Hello again"),
    ]
    assert hub.subscribers == {}  # unsubscribed when the readers left
