"""Whether a response id names a response its thread has (durable_teams/gateway/responses_view.py
says what one is), so one response answers to one id and an id no request was given is a 404:

- a turn's first response (step 0) starts at the turn's message: nothing but notes for people
  (refused signals, kind "notice") lies between its start and the turn's message;
- its k-th answer's response (step k) starts right after the k-th question of the turn (the
  message of the agent that asked it, counted from the turn's message back).

Pure: the caller reads the log (`responses_state.read`)."""

from __future__ import annotations

from durable_teams.gateway.doors.responses.from_log import (
    ResponseRef,
    UnknownResponse,
    is_turn_start,
    stops_of,
)
from durable_teams.workflows.messages import Message


def check_turn_start(ref: ResponseRef, messages: list[Message]) -> None:
    """`messages` (the log from `ref.start`): a step-0 response opens on its turn's message."""
    for message in messages:
        if is_turn_start(message):
            return
        if message.kind != "notice":
            raise UnknownResponse(f"no response {ref.id!r}")


def check_step(ref: ResponseRef, stretch: list[Message], tools: set[str], breaks: set[str]) -> None:
    """`stretch`: the log before `ref.start` back to its turn's message (first). A step-k
    response follows the turn's k-th question, asked by the message right before it."""
    if not stretch or not is_turn_start(stretch[0]) or not stops_of(stretch[-1], tools, breaks):
        raise UnknownResponse(f"no response {ref.id!r}")
    if sum(1 for m in stretch if stops_of(m, tools, breaks)) != ref.step:
        raise UnknownResponse(f"no response {ref.id!r}")
