"""A task as a turn of a thread (the A2A door's tasks, the MCP door's): the task id names the
thread and the turn (A2A's `contextId` is the thread), and a task's state is read from the
conversation's status each time (nothing kept in the gateway, so a task outlives any restart;
the state itself: durable_teams/workflows/turn_states.py). Pure: no Temporal, no HTTP."""

from __future__ import annotations

__all__ = ["SEPARATOR", "NotATask", "parse_task_id", "task_id"]

SEPARATOR = "::"


class NotATask(ValueError):
    """A task id this server did not give."""


def task_id(thread: str, turn: int) -> str:
    return f"{thread}{SEPARATOR}{turn}"


def parse_task_id(value: str) -> tuple[str, int]:
    """(thread, turn) of a task id; `NotATask` for anything else."""
    thread, sep, turn = value.rpartition(SEPARATOR)
    if (not sep or not thread or not (turn.isascii() and turn.isdigit()) or len(value) > 300
            or not value.isprintable() or task_id(thread, int(turn)) != value or int(turn) < 1):
        raise NotATask(f"no task {value[:80]!r}")  # one id per task: no "::01", no other digits
    return thread, int(turn)
