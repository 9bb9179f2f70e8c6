"""A turn as an A2A task: the one mapping from a turn's state in the team's words
(workflows/turn_states.py) to the names of A2A's `TaskState` (without the `TASK_STATE_`
prefix). Shared by the A2A door (durable_teams/gateway/doors/a2a/) and its push notifications
(workflows/a2a_push.py, durable_teams/activities/a2a_push_*.py), which run on both sides of
the gateway and the worker; never read by `TeamWorkflow`. Pure.

The names stay A2A's on the wire of a push workflow too: its cursor (`PushInput.last`) starts
with the state told last."""

from __future__ import annotations

from dataclasses import dataclass

from .turn_states import Progress, TurnState

A2A_STATES: dict[Progress, str] = {
    "queued": "SUBMITTED", "working": "WORKING", "waiting": "INPUT_REQUIRED",
    "completed": "COMPLETED", "failed": "FAILED", "cancelled": "CANCELED",
}
FINAL = {"COMPLETED", "FAILED", "CANCELED", "REJECTED"}
"""The A2A states a task ends in."""


@dataclass(frozen=True)
class TaskState:
    """An A2A task's state (A2A's name without the prefix) and its status text: the question
    asked, the reply, or why it failed."""

    state: str
    text: str = ""


def a2a_state(found: TurnState) -> TaskState:
    """A turn's state as its A2A task's."""
    return TaskState(A2A_STATES[found.state], found.text)
