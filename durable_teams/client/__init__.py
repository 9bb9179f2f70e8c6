"""Talking to conversations: connect, start, send turns and replies, follow events, read state.
No worker code.

`send_turn` sends a turn and waits for its reply; `submit_turn` returns as soon as the
conversation has accepted the turn (an `AcceptedTurn`, whose `reply()` waits), which is what
the HTTP gateway acknowledges. The refusals are typed: `ConversationEnded` (and its
`ConversationNotFound`), `ConversationBusy`, `ReplyRejected`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "connect": "durable_teams.client.connection",
    "TASK_QUEUE": "durable_teams.client.connection",
    "start_conversation": "durable_teams.client.start",
    "send_turn": "durable_teams.client.send",
    "submit_turn": "durable_teams.client.send",
    "AcceptedTurn": "durable_teams.client.send",
    "send_reply": "durable_teams.client.send",
    "follow": "durable_teams.client.events",
    "Event": "durable_teams.client.events",
    "ConversationEnded": "durable_teams.client.refusals",
    "ConversationNotFound": "durable_teams.client.refusals",
    "ConversationBusy": "durable_teams.client.refusals",
    "ReplyRejected": "durable_teams.client.refusals",
    "TurnAbandoned": "durable_teams.client.refusals",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.client.connection import TASK_QUEUE, connect
    from durable_teams.client.events import Event, follow
    from durable_teams.client.refusals import (
        ConversationBusy,
        ConversationEnded,
        ConversationNotFound,
        ReplyRejected,
        TurnAbandoned,
    )
    from durable_teams.client.send import AcceptedTurn, send_reply, send_turn, submit_turn
    from durable_teams.client.start import start_conversation
