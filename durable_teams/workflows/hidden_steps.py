"""Hidden steps: the `hide_step` update (a mixin of `TeamWorkflow`, like cancelling.py).

A step is one stretch of a turn, named `<turn>_<log index>_<step>`: the turn, the log index its
input went in at, 0 for the stretch that opened the turn, k for the one its k-th answer opened.
A reader that serves steps as objects of their own (the gateway's Responses door serves each as
a response) hides one here, in the conversation's state, so every reader, in every process and
after any restart, leaves it out. The log itself is not changed: the step stays in the
thread's transcript and in the models' view of it.

Replay: the update's first wire name was `delete_response` (the one door that used it named
it). Conversations that took it under that name replay against `legacy_hide_step`, registered
under it; gateways of that release still call it. Nothing changes for a conversation that
never hides a step: its state field is left off the wire while empty.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from .state import ConversationState

MAX_HIDDEN = 10_000
"""Hidden steps a conversation keeps marks for (a mark is a few bytes, carried across
continue-as-new); past it, `hide_step` is refused."""
MAX_KEY_CHARS = 64
FIRST_WIRE_NAME = "delete_response"
"""The update's name in conversations recorded before it was `hide_step` (kept for replay)."""


class StepHiding:
    """`hide_step`: mark a step (`<turn>_<log index>_<step>`) hidden from readers."""

    state: ConversationState

    @workflow.update
    def hide_step(self, key: str | None = None, *extra: object) -> bool:
        """Mark `key` hidden; False when it was already (a second request that lost a race)."""
        return self._hide(key)

    @hide_step.validator
    def _validate_hide_step(self, key: str | None = None, *extra: object) -> None:
        self._check(key, extra)

    @workflow.update(name=FIRST_WIRE_NAME)
    def legacy_hide_step(self, key: str | None = None, *extra: object) -> bool:
        """`hide_step` under its first wire name: recorded conversations replay, and a gateway
        of that release still hides steps."""
        return self._hide(key)

    @legacy_hide_step.validator
    def _validate_legacy_hide_step(self, key: str | None = None, *extra: object) -> None:
        self._check(key, extra)

    def _hide(self, key: str | None) -> bool:
        assert isinstance(key, str)
        if key in self.state.hidden_steps:
            return False
        self.state.hidden_steps.append(key)
        return True

    def _check(self, key: str | None, extra: tuple[object, ...]) -> None:
        parts = key.split("_") if isinstance(key, str) and len(key) <= MAX_KEY_CHARS else []
        if extra or len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
            raise ApplicationError("hide_step takes one '<turn>_<index>_<step>' key", type="Rejected")
        if int(parts[0]) > self.state.turns_started or int(parts[0]) < 1:
            raise ApplicationError(f"no turn {parts[0]} to hide a step of", type="Rejected")
        if len(self.state.hidden_steps) >= MAX_HIDDEN and key not in self.state.hidden_steps:
            raise ApplicationError(f"this conversation has {MAX_HIDDEN} hidden steps already",
                                   type="Rejected")
