"""`multitask_strategy="interrupt"`: the new run starts now, as LangGraph's does. Every run of
the thread that has not ended (the one running, one waiting for an answer, those queued) is
cancelled, then the new turn goes in only if no other turn got in meanwhile (`after_turns`);
if one did (another run sent at the same moment, "interrupt" or not), it is cancelled in turn
and the new turn sent again. So of several "interrupt" runs sent at once on a busy thread each
interrupts the ones before it: the last the thread takes runs, the others end cancelled
(they queued behind each other before)."""

from __future__ import annotations

from temporalio.client import WorkflowUpdateFailedError

from durable_teams.client.refusals import TurnConflict
from durable_teams.client.send import submit_turn
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_multitask import Busy, cancel_update
from durable_teams.gateway.doors.langgraph.langgraph_queue import unfinished
from durable_teams.gateway.doors.langgraph.langgraph_reading import snapshot
from durable_teams.gateway.doors.langgraph.langgraph_requests import RunRequest
from durable_teams.gateway.doors.langgraph.langgraph_stream import RunStream
from durable_teams.gateway.doors.langgraph.langgraph_wire import RunRef

MAX_TRIES = 10
"""How often an "interrupt" run cancels what got in before it and tries again (then 409)."""


async def interrupting_run(gw: Gateway, thread: str, asked: RunRequest, scope: str | None) -> RunStream:
    """The run begun after every earlier one was cancelled. Its message is the first turn
    message after the conversation as read once they were (a queued turn cancelled never
    writes one; the one that was running wrote its own before)."""
    for _ in range(MAX_TRIES):
        seen = await snapshot(gw, thread, scope)
        earlier = await unfinished(gw, thread, seen.status)
        for turn in earlier:
            try:
                await cancel_update(gw, thread, turn)
            except WorkflowUpdateFailedError:  # ended (or being cancelled) meanwhile
                pass
        after = seen.status.turns  # the turns it cancelled: one taken since is cancelled in the next try
        if earlier:
            seen = await snapshot(gw, thread, scope)
        try:
            accepted = await submit_turn(gw.client, thread, asked.text or "", busy_timeout=gw.busy_seconds,
                                         after_turns=after, interrupt_before=asked.interrupt_before,
                                         interrupt_after=asked.interrupt_after, metadata=asked.metadata)
        except TurnConflict:  # another run got in since: interrupted in turn
            continue
        return RunStream(gw, thread, RunRef(accepted.number), asked.team, len(seen.messages),
                         messages=seen.messages, created=seen.created)
    raise Busy(f"thread {thread} took another run each of {MAX_TRIES} times this run interrupted the ones "
               "before it: send it again")
