"""Waiting for a turn's outcome in one call: the `turn_outcome` update (a mixin of
`TeamWorkflow`, like intake.py).

A client that sent a turn (or answered one of its questions) asks for what comes of it with
this update, which completes when the turn has an outcome: its reply; or, for a waiter that
named the questions it has seen, a question the conversation asks a person that it has not;
or, when the turn's reply is no longer kept, `gone`. The client's call waits on the server (a
long poll) and nothing asks the workflow meanwhile, however long the turn takes
(durable_teams/client/turn_outcome.py).

The handler is abandoned when the run continues as new or is reset (its caller then waits the
earlier way, durable_teams/client/reply_watch.py). Nothing changes for a conversation that
never receives the update (recorded histories replay as they were): the handler is new and
issues no command.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import inputs
    from .conversation_reads import OutcomeWait, TurnOutcome
    from .state import ConversationState


class TurnWaits:
    """`turn_outcome`, over the conversation's state."""

    state: ConversationState

    @workflow.update(unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def turn_outcome(self, wait: OutcomeWait | None = None, *extra: object) -> TurnOutcome:
        """Turn `wait.turn`'s outcome, once it has one (see the module's docstring)."""
        decoded = inputs.decode(OutcomeWait, [wait, *extra], "turn_outcome")
        await workflow.wait_condition(lambda: self._outcome_of(decoded) is not None)
        outcome = self._outcome_of(decoded)
        assert outcome is not None
        return outcome

    @turn_outcome.validator
    def _validate_turn_outcome(self, wait: OutcomeWait | None = None, *extra: object) -> None:
        try:
            decoded = inputs.decode(OutcomeWait, [wait, *extra], "turn_outcome")
        except inputs.InvalidInput as err:
            raise ApplicationError(str(err), type="InvalidInput") from None
        if not 1 <= decoded.turn <= self.state.turns_started:
            raise ApplicationError(f"this conversation has no turn {decoded.turn} (it has started "
                                   f"{self.state.turns_started})", type="NoSuchTurn")

    def _outcome_of(self, wait: OutcomeWait) -> TurnOutcome | None:
        """The turn's outcome now, or None while it has none."""
        reply = self.state.replies.get(wait.turn)
        if reply is not None:
            return TurnOutcome(turn=wait.turn, reply=reply)
        if wait.seen is not None:
            fresh = [q for q in self.state.pending.values() if q.question_id not in wait.seen]
            if fresh:  # asked before the turn ended: what the waiter's person answers next
                return TurnOutcome(turn=wait.turn, question=fresh[0])
        if any(number == wait.turn for number, _ in self.state.queue):
            return None
        return TurnOutcome(turn=wait.turn, gone=True)  # answered before the replies kept
