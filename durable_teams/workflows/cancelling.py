"""Cancelling a turn: the `cancel_turn` update (a mixin of `TeamWorkflow`, like intake.py).

A running turn is stopped with the workflow's own cancellation: what it awaits is cancelled,
so an activity in flight is asked to stop (a regular model call or tool hears it on its next
heartbeat), a child workflow is cancelled, a question it waited on is withdrawn. The SDK turns
a cancelled activity into an `ActivityError`, which the turn takes as a failed step, so the
turn's budget is spent too: no further model call, tool or handoff starts (the calls left in a
batch are answered "Not run"). The turn then ends with the reply status "cancelled"; each of
its tool calls left without an answer gets one saying it was not run, so the next turn's model
calls see a well-formed conversation. A queued turn is taken out of the queue with the same
reply.

Nothing changes for a conversation that never receives `cancel_turn` (older histories replay as
recorded): the update is new, and the cancellation caught here is only ever its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from .answering import Budget
    from .human import HumanDesk
    from .messages import Message
    from .state import ConversationState, TurnReply

CANCELLED = "Cancelled: the turn was stopped before it finished."
NOT_RUN = "Not run: the turn was cancelled."


class TurnCancel:
    """`cancel_turn` and the wrapper the routing loop runs each turn in."""

    state: ConversationState
    desk: HumanDesk
    running_turn: int | None = None
    """The number of the turn `_cancellable` runs now."""
    cancel_requested: int | None = None
    runner: asyncio.Task[object] | None = None
    turn_budget: Budget | None = None
    """The running turn's budget (set by `TeamWorkflow._run_turn`)."""

    async def _cancellable(self, number: int, turn: Awaitable[TurnReply]) -> TurnReply:
        """`turn`'s reply, or the reply of a turn cancelled by `cancel_turn` while it ran."""
        self.running_turn, self.runner = number, asyncio.current_task()
        try:
            reply = await turn
        except asyncio.CancelledError:
            if self.cancel_requested != number:  # the workflow itself is cancelled: not ours
                raise
            if self.runner is not None:
                self.runner.uncancel()
            return self._cancelled(number)
        else:  # ended by the spent budget, or a cancelled step taken as a failure
            return self._cancelled(number) if self.cancel_requested == number else reply
        finally:
            self.running_turn = None

    def _cancelled(self, number: int) -> TurnReply:
        state = self.state
        for qid in list(state.pending):
            state.pending.pop(qid, None)
        self.desk._mark()
        state.in_progress = None
        state.answered_calls.clear()
        close_open_calls(state)
        agent = state.active_agent or "team"
        state.transcript.append(Message(role="assistant", content=CANCELLED, name=agent, kind="error"))
        return TurnReply(turn=number, text=CANCELLED, agent=agent, status="cancelled")

    @workflow.update
    def cancel_turn(self, number: int | None = None, *extra: object) -> int:
        """Cancel turn `number` (running or queued); returns it. Its reply says "cancelled"."""
        assert isinstance(number, int)
        if number == self.running_turn:
            self.cancel_requested = number
            if self.turn_budget is not None:
                spent = 10**9
                self.turn_budget.model_calls = self.turn_budget.handoffs = self.turn_budget.tool_calls = spent
            if self.runner is not None:
                self.runner.cancel()
            return number
        for position, (queued, _) in enumerate(self.state.queue):
            if queued == number:
                self.state.queue.pop(position)
                self.state.replies[number] = TurnReply(turn=number, text=CANCELLED, agent="team",
                                                       status="cancelled")
        return number

    @cancel_turn.validator
    def _validate_cancel_turn(self, number: int | None = None, *extra: object) -> None:
        if isinstance(number, bool) or not isinstance(number, int) or extra:
            raise ApplicationError("cancel_turn takes one turn number", type="TurnRejected")
        if number in self.state.replies or number > self.state.turns_started or number < 1:
            raise ApplicationError(f"turn {number} is not running: nothing to cancel", type="NotRunning")
        if self.cancel_requested == number:
            raise ApplicationError(f"turn {number} is being cancelled already", type="NotRunning")


def close_open_calls(state: ConversationState) -> None:
    """Answer each tool call of the latest turn that has no answer yet (`NOT_RUN`)."""
    log = state.transcript.log
    start = next((i for i in range(len(log) - 1, -1, -1) if log[i].role == "user"
                  and log[i].agent_run == 0 and log[i].kind == "message"), 0)
    answered = {m.tool_call_id for m in log[start:] if m.role == "tool"}
    for message in list(log[start:]):
        for call in message.tool_calls if message.role == "assistant" else []:
            if call.id not in answered:
                answered.add(call.id)
                state.transcript.append(Message(role="tool", content=NOT_RUN, name=call.name,
                                                tool_call_id=call.id, agent_run=message.agent_run,
                                                kind="error"))
