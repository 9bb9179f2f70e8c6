"""The thread's queue as the door needs it when a queued run was cancelled before it began:
such a turn never writes its message in the shared conversation, and the `status` query's
counts (`answering`) take the queue for the turns numbered last. A run finds its message by
counting the turn messages after a floor, less the turns cancelled before they began.

A turn that began has its usage tallied in its reply (empty when it made no model call); a
turn cancelled in the queue has none (workflows/cancelling.py). The replies are read only when
the counts cannot be right (`working_turn`) or a count passes such a turn (`never_began`)."""

from __future__ import annotations

from collections.abc import Iterable

from durable_teams.gateway.core.threads import Gateway
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply
from durable_teams.workflows.turn_states import answering

KEPT_REPLIES = 200
"""The turns back whose replies the workflow keeps: an unfinished turn is among them."""


def cancelled_in_queue(reply: TurnReply) -> bool:
    """Whether the reply is that of a turn cancelled before it began (it wrote no message)."""
    return reply.status == "cancelled" and reply.usage is None


async def replies_of(gw: Gateway, thread: str, numbers: Iterable[int]) -> list[TurnReply]:
    asked = list(numbers)
    if not asked:
        return []
    return await gw.client.get_workflow_handle(thread).query(TeamWorkflow.turn_replies, asked)


async def never_began(gw: Gateway, thread: str, numbers: Iterable[int]) -> set[int]:
    """Those of turns `numbers` cancelled before they began."""
    return {r.turn for r in await replies_of(gw, thread, numbers) if cancelled_in_queue(r)}


async def working_turn(gw: Gateway, thread: str, status: ConversationStatus) -> int:
    """The turn the thread works on (the head of its queue), or its latest when none is queued:
    `answering(status)`, unless a queued turn was cancelled. Then a reply is numbered at or
    after the turn `answering` tells (every turn answered in order comes before the head), and
    the head is the first turn without a reply (one query)."""
    counted = answering(status)
    if status.working_turn is not None:  # the worker says (a release that tells it)
        return counted
    last = status.last_reply
    if not status.queued_turns or last is None or last.turn < counted:
        return counted
    return next(iter(await unfinished(gw, thread, status)), counted)


async def unfinished(gw: Gateway, thread: str, status: ConversationStatus) -> list[int]:
    """The thread's turns that have no reply yet (running, waiting or queued), in order."""
    numbers = range(max(1, status.turns - KEPT_REPLIES + 1), status.turns + 1)
    ended = {r.turn for r in await replies_of(gw, thread, numbers)}
    return [n for n in numbers if n not in ended]


def turn_messages(messages: list[Message], floor: int = 0) -> list[int]:
    """The indices of the turn messages (a person's, each beginning a turn) from `floor` on."""
    return [index for index in range(floor, len(messages))
            if messages[index].role == "user" and messages[index].kind == "message"]


async def turn_start(gw: Gateway, thread: str, messages: list[Message], turn: int, latest: int) -> int:
    """The index of turn `turn`'s message in the shared conversation (`latest`: the newest
    turn begun), counted back from its end over the turns after it that began; 0 when it does
    not hold it."""
    back = latest - turn
    if back > 0:
        back -= len(await never_began(gw, thread, range(turn + 1, latest + 1)))
    begun = turn_messages(messages)
    return begun[-1 - back] if back < len(begun) else 0
