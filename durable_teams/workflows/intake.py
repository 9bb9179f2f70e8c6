"""How turns, answers and other signals enter a conversation: `TeamWorkflow`'s update and
signal handlers (a mixin, so workflows/conversation.py keeps the routing loop in view).

Every handler takes `*extra`, so the SDK decodes its arguments as plain JSON and they are
validated here (workflows/inputs.py): a malformed update is rejected by its validator with a
reason the caller gets at once; a malformed or refused signal, whose sender gets no answer,
is recorded for the `status` query and noted in the transcript (never shown to a model). None
of it can fail a workflow task.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import breakpoints, inputs
    from .human import (
        EDIT_REFUSED,
        QUESTION_CLOSED,
        HumanDesk,
        edit_problem,
        question_closed,
        reply_problem,
    )
    from .messages import TeamSpec
    from .state import (
        AnswerAck,
        AnswerOutcome,
        ClientMetadata,
        ConversationState,
        HumanReply,
        TurnReply,
        UserTurn,
    )
    from .usage import current_turn

MAX_TURN_BYTES = 256 * 1024
MAX_QUEUED_TURNS = 100
"""Turns waiting in one conversation's queue (`submit_turn` refuses more, for a while)."""
MAX_ID_CHARS = 256
"""A turn's `sender` and `turn_id` are names, kept in state: longer ones are refused."""
SIGNALS = ("post_message", "human_reply", "close")
MAX_METADATA_BYTES = 16 * 1024
"""A client's metadata on a conversation (its memo), as JSON, at most."""
KEEP_OUTCOMES = 50
"""Answers-by-signal whose outcome is kept for the `answer_outcome` query."""
KEYED_UPDATE = "keyed:"
"""How the update of an input sent under an idempotency key is named: `keyed:<key>`, its
input id `<key>.<digest of its content>` (durable_teams/gateway/core/idempotency.py)."""


class Intake:
    """Update and signal handlers of `TeamWorkflow`, over the attributes it sets up."""

    state: ConversationState
    desk: HumanDesk
    team: TeamSpec | None
    closing: bool

    def _enqueue(self, turn: UserTurn) -> int:
        if turn.turn_id and turn.turn_id in self.state.turn_ids:
            return self.state.turn_ids[turn.turn_id]  # sent again: same turn, same reply
        self.state.turns_started += 1
        self.state.queue.append((self.state.turns_started, turn))
        if turn.turn_id:
            self.state.turn_ids[turn.turn_id] = self.state.turns_started
        self._took(turn.turn_id)
        return self.state.turns_started

    def _took(self, input_id: str | None) -> None:
        """Note the latest input's id (for `status`: a client tells where the conversation is)."""
        self.state.previous_input_id, self.state.last_input_id = self.state.last_input_id, input_id

    def _turn_conflict(self, turn: UserTurn) -> str | None:
        """Why a turn sent `after_turns=N` comes too late (another turn got in first), or None."""
        known = turn.turn_id is not None and turn.turn_id in self.state.turn_ids
        if known or turn.after_turns is None or turn.after_turns == self.state.turns_started:
            return None
        return (f"the conversation has started {self.state.turns_started} turns, not "
                f"{turn.after_turns}: another turn came first")

    def _turn_problem(self, turn: UserTurn) -> str | None:
        if turn.turn_id and turn.turn_id in self.state.turn_ids:
            return None
        if self.closing:
            return "the conversation is closed"
        if not turn.text.strip():
            return "the message is empty"
        if len(turn.text.encode("utf-8", "replace")) > MAX_TURN_BYTES:
            return f"the message is over {MAX_TURN_BYTES:,} bytes"
        names = [*(turn.interrupt_before or []), *(turn.interrupt_after or [])]
        if names and self.team is not None:
            problem = breakpoints.turn_problem(self.team, names)
            if problem:
                return problem
        if turn.metadata and len(json.dumps(turn.metadata).encode()) > MAX_METADATA_BYTES:
            return f"the turn's metadata is over {MAX_METADATA_BYTES:,} bytes as JSON"
        for field, value in (("sender", turn.sender), ("turn_id", turn.turn_id)):
            if value is not None and len(value) > MAX_ID_CHARS:
                return f"{field} is over {MAX_ID_CHARS} characters"
        return None

    def _key_used(self, input_id: str | None) -> str | None:
        """Why an input sent under an idempotency key (its update named `keyed:<key>`) is not
        taken: the conversation took another input under that key. Temporal runs one update
        of an id per run only; this keeps one input per key across continue-as-new too (a
        request's twin sent at once, reaching the next run). A validator: never run on replay."""
        update = workflow.current_update_info()
        if update is None or not update.id.startswith(KEYED_UPDATE) or not input_id:
            return None
        taken = self._inputs_taken(f"{update.id.removeprefix(KEYED_UPDATE)}.")
        if not taken or input_id in taken:
            return None
        return "another input under this idempotency key was taken by this conversation"

    def _inputs_taken(self, prefix: str) -> dict[str, int]:
        taken = {i: n for i, n in self.state.turn_ids.items() if prefix and i.startswith(prefix)}
        return taken | {i: o.turn for i, o in self.state.answer_outcomes.items()
                        if prefix and i.startswith(prefix) and o.taken and o.turn is not None}

    def _refuse(self, signal: str, reason: str) -> None:
        workflow.logger.warning("Refused signal %s: %s", signal, reason)
        inputs.refuse(self.state, signal, reason, workflow.now())

    @workflow.update
    def submit_turn(self, turn: UserTurn | None = None, *extra: object) -> int:
        """Queue a user turn and return its number at once; its reply is read with the
        query `turn_replies`. The update completes in the workflow task that accepts it, so
        its events never interleave with a turn's model calls (which may be local
        activities). The same `turn_id` sent again returns the same number."""
        return self._enqueue(inputs.decode(UserTurn, [turn, *extra], "submit_turn"))

    @submit_turn.validator
    def _validate_submit_turn(self, turn: UserTurn | None = None, *extra: object) -> None:
        decoded = _decoded(UserTurn, [turn, *extra], "submit_turn")
        key_used = self._key_used(decoded.turn_id)
        if key_used:
            raise ApplicationError(key_used, type="TurnConflict")
        problem = self._turn_problem(decoded)
        if problem:
            kind = "ConversationClosed" if self.closing else "TurnRejected"
            raise ApplicationError(problem, type=kind)
        conflict = self._turn_conflict(decoded)
        if conflict:
            raise ApplicationError(conflict, type="TurnConflict")
        known = decoded.turn_id is not None and decoded.turn_id in self.state.turn_ids
        if not known and len(self.state.queue) >= MAX_QUEUED_TURNS:
            raise ApplicationError(f"{MAX_QUEUED_TURNS} turns are waiting to be answered on this "
                                   "conversation; send this one later", type="ConversationBusy")

    @workflow.query
    def turn_replies(self, numbers: list[int]) -> list[TurnReply]:
        """The replies to those of turns `numbers` that are answered (kept for the latest 200
        turns across continue-as-new): one query serves every waiter of a client process."""
        return [self.state.replies[n] for n in numbers if n in self.state.replies]

    @workflow.query
    def turn_metadata(self, number: int) -> dict[str, Any] | None:
        """The metadata turn `number` was sent with (`UserTurn.metadata`), queued or answered
        (answered: for the latest 200 turns), or None."""
        queued = next((turn for n, turn in self.state.queue if n == number), None)
        reply = self.state.replies.get(number)
        return queued.metadata if queued is not None else reply.metadata if reply is not None else None

    @workflow.query
    def turn_number(self, turn_id: str) -> int | None:
        """The number of the turn sent with `turn_id` (by `post_message`, on a cluster that
        has updates turned off), or None when the conversation has not taken it (refused: the
        reason is in `status`)."""
        return self.state.turn_ids.get(turn_id)

    @workflow.signal
    def post_message(self, turn: UserTurn | None = None, *extra: object) -> None:
        """A user turn by signal (on a cluster with updates turned off); a refused turn is noted (`status`,
        transcript) since its sender gets no answer."""
        try:
            decoded = inputs.decode(UserTurn, [turn, *extra], "post_message")
        except inputs.InvalidInput as err:
            return self._refuse("post_message", str(err))
        problem = self._turn_problem(decoded) or self._turn_conflict(decoded)
        if problem:
            return self._refuse("post_message", problem)
        self._enqueue(decoded)

    @workflow.signal
    def close(self, *extra: object) -> None:
        """End the conversation once queued turns are answered."""
        self.closing = True
        if extra:
            self._refuse("close", f"close takes no arguments; ignored {len(extra)} (closing anyway)")

    @workflow.signal(dynamic=True)
    def unknown_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Any other signal name (a typo, say): recorded, where it would otherwise wait
        unseen in the SDK's buffer for a handler that never comes."""
        self._refuse(name, f"no such signal; this workflow takes {', '.join(SIGNALS)}")

    # ---- the person in the loop -------------------------------------------------------------

    @workflow.signal
    def human_reply(self, reply: HumanReply | None = None, *extra: object) -> None:
        """Answer a pending question; stale or unknown ids are recorded and ignored."""
        try:
            decoded = inputs.decode(HumanReply, [reply, *extra], "human_reply")
        except inputs.InvalidInput as err:
            return self._refuse("human_reply", str(err))
        closed = question_closed(self.state, decoded.question_id)
        problem = self.desk.receive(decoded)
        if problem:
            self._refuse("human_reply", problem)
        else:
            self._took(decoded.input_id)
        self._note_answer(decoded.input_id, problem, problem is not None and closed)

    def _note_answer(self, input_id: str | None, problem: str | None, closed: bool = False) -> None:
        """State only (no command: replays unchanged): what became of an answer with an
        `input_id`, for the `answer_outcome` and `inputs_taken` queries."""
        if not input_id:
            return
        outcomes = self.state.answer_outcomes
        outcomes[input_id] = AnswerOutcome(taken=problem is None, reason=problem or "", closed=closed,
                                           turn=current_turn(self.state.queue, self.state.turns_started))
        for stale in list(outcomes)[:-KEEP_OUTCOMES]:
            del outcomes[stale]

    @workflow.query
    def answer_outcome(self, input_id: str) -> AnswerOutcome | None:
        """What became of the answer sent as `human_reply` with `input_id` (None: not seen)."""
        return self.state.answer_outcomes.get(input_id)

    @workflow.query
    def inputs_taken(self, prefix: str) -> dict[str, int]:
        """The input ids starting with `prefix` this conversation took (the turns it keeps and
        the latest answers), each with its turn: an Idempotency-Key's request is found again
        however late, and another request under the same key is told apart (the gateway)."""
        return self._inputs_taken(prefix)

    @workflow.update
    def answer(self, reply: HumanReply | None = None, *extra: object) -> AnswerAck:
        """Answer a pending question and learn at once whether it was accepted."""
        decoded = inputs.decode(HumanReply, [reply, *extra], "answer")
        if self.desk.receive(decoded) is None:
            self._took(decoded.input_id)
            self._note_answer(decoded.input_id, None)
        return AnswerAck(question_id=decoded.question_id)

    @answer.validator
    def _validate_answer(self, reply: HumanReply | None = None, *extra: object) -> None:
        decoded = _decoded(HumanReply, [reply, *extra], "answer")
        conflict = self._key_used(decoded.input_id)
        if conflict:  # before the question's state: it may be answered by the key's input
            raise ApplicationError(conflict, type="TurnConflict")
        problem = reply_problem(self.state, decoded)
        if problem:
            closed = question_closed(self.state, decoded.question_id)
            raise ApplicationError(problem, *([QUESTION_CLOSED] if closed else []), type="AnswerRejected")
        edit = edit_problem(self.desk.tool_specs(), self.state, decoded)
        if edit:  # the question stays open for arguments that fit
            raise ApplicationError(edit, EDIT_REFUSED, type="AnswerRejected")


    @workflow.update
    def set_client_metadata(self, given: ClientMetadata | None = None, *extra: object) -> dict[str, Any]:
        """Merge a client's metadata into the conversation's memo (`ClientMetadata`); returns it as it is now."""
        decoded = inputs.decode(ClientMetadata, [given, *extra], "set_client_metadata")
        merged = _merged_metadata(decoded)
        workflow.upsert_memo({f"{decoded.client}_metadata": merged})
        return merged

    @set_client_metadata.validator
    def _validate_set_client_metadata(self, given: ClientMetadata | None = None, *extra: object) -> None:
        merged = _merged_metadata(_decoded(ClientMetadata, [given, *extra], "set_client_metadata"))
        if len(json.dumps(merged).encode()) > MAX_METADATA_BYTES:
            raise ApplicationError(f"the metadata would be over {MAX_METADATA_BYTES:,} bytes as JSON",
                                   type="InvalidInput")


def _merged_metadata(given: ClientMetadata) -> dict[str, Any]:
    kept = workflow.memo_value(f"{given.client}_metadata", {})
    return {**(kept if isinstance(kept, dict) else {}), **given.metadata}


def _decoded(model: type[inputs.M], values: list[object], what: str) -> inputs.M:
    """`inputs.decode` for an update's validator: the caller gets the reason at once."""
    try:
        return inputs.decode(model, values, what)
    except inputs.InvalidInput as err:
        raise ApplicationError(str(err), type="InvalidInput") from None
