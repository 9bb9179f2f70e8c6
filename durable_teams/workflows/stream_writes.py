"""What tools wrote to their stream writers (durable_teams/teams/stream_writer.py), as the
LangGraph door streams it with the shared conversation. Pure: no Temporal imports.

A tool's writes are kept on its message (`Message.custom`). A worker's tool messages stay in
its private working area unless its whole run joins the shared conversation
(`output_mode="full_history"`); so that its writes are streamed all the same, the first message
of the run that joins the shared conversation carries them, in order, before its own.
"""

from __future__ import annotations

from typing import Any

from .handoff import HandoffView
from .messages import Message
from .transcript import Transcript


def shared_with_writes(transcript: Transcript, handoffs: HandoffView) -> list[Message]:
    """The shared conversation as the `transcript` query shows it (notices too), each worker
    run's private writes carried by the first of its messages that joined it."""
    log, shared = list(transcript.log), transcript.shared
    in_shared = set(shared)
    private: dict[int, list[Any]] = {}
    for index, message in enumerate(log):
        if message.agent_run and message.custom and index not in in_shared:
            private.setdefault(message.agent_run, []).extend(message.custom)
    for index in shared:
        writes = private.pop(log[index].agent_run, None) if log[index].agent_run else None
        if writes:
            log[index] = log[index].model_copy(update={"custom": writes + (log[index].custom or [])})
    return Transcript.of(log, list(shared), dict(transcript.runs)).view(0, handoffs=handoffs, notices=True)
