"""Deleting a Responses API response: the `delete_response` update (a mixin of `TeamWorkflow`,
like cancelling.py). The gateway serves a response as a stretch of the thread's log
(durable_teams/gateway/doors/responses/view.py); deleting one marks it here, in the conversation's
state, so every gateway process, after any restart, stops serving it. The log itself is not
changed: the turn stays in the thread's transcript and in the models' view of it.

Nothing changes for a conversation that never receives `delete_response` (older histories
replay as recorded): the update is new, and its state field is left off the wire while empty.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from .state import ConversationState

MAX_DELETED = 10_000
"""Deleted responses a conversation keeps marks for (a mark is a few bytes, carried across
continue-as-new); past it, deletes are refused."""
MAX_KEY_CHARS = 64


class ResponseDeletion:
    """`delete_response`: mark a response (`<turn>_<log index>_<step>`) as deleted."""

    state: ConversationState

    @workflow.update
    def delete_response(self, key: str | None = None, *extra: object) -> bool:
        """Mark `key` deleted; False when it was already (a delete that lost a race)."""
        assert isinstance(key, str)
        if key in self.state.deleted_responses:
            return False
        self.state.deleted_responses.append(key)
        return True

    @delete_response.validator
    def _validate_delete_response(self, key: str | None = None, *extra: object) -> None:
        parts = key.split("_") if isinstance(key, str) and len(key) <= MAX_KEY_CHARS else []
        if extra or len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
            raise ApplicationError("delete_response takes one '<turn>_<index>_<step>' key", type="Rejected")
        if int(parts[0]) > self.state.turns_started or int(parts[0]) < 1:
            raise ApplicationError(f"no turn {parts[0]} to delete a response of", type="Rejected")
        if len(self.state.deleted_responses) >= MAX_DELETED and key not in self.state.deleted_responses:
            raise ApplicationError(f"this conversation has {MAX_DELETED} deleted responses already",
                                   type="Rejected")
