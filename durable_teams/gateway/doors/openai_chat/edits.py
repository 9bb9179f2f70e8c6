"""An earlier message edited in a chat client: the thread it came from is forked, not replaced.

Open WebUI and LibreChat let a person edit an earlier user message and regenerate: the client
resends the history up to the edited message. Such a request continues no thread (the thread
has gone further, durable_teams/gateway/core/resent_threads.py). When its history carries a thread's
mark (so the thread is known, and is the caller's: marks name threads only inside the caller's
own chat family) and the user messages before the edited one are, in order, that thread's
turns and answers so far (each answer's words are read from its checkpoint) while the
thread's next turn said other words, the thread is forked at the start of that turn with the
edited text (durable_teams/client/time_travel.py): nothing before it runs
again, the original stays as it was. The fork's id is in the same family with a mark of its
own, derived from the request (so a retried request finds the same fork), and its first turn
is recorded under the request's input id, so the client's next request continues the fork.

Not forked (a new thread opens with the history, as before): a history without a mark, an
edit of the first message (nothing of the old thread is resent), and an edited answer to a
question (not a turn: the answer's checkpoint is inside its turn).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_teams.client.checkpoints import list_checkpoints
from durable_teams.client.time_travel import fork
from durable_teams.gateway.core.outcomes import Outcome
from durable_teams.gateway.core.resent_history import (
    ChatHistory,
    ChatKey,
    RequestKeys,
    family,
    flat,
)
from durable_teams.gateway.core.scopes import sees
from durable_teams.gateway.core.thread_marks import MARK_CHARS, latest_mark
from durable_teams.gateway.core.threads import Gateway

log = logging.getLogger("durable_teams.gateway")


@dataclass(frozen=True)
class Edit:
    """Where an edited history leaves its thread: `thread`'s turn `turn` (checkpoint `at`) said
    other words than the edited message."""

    thread: str
    turn: int
    at: str


async def edited_turn(gw: Gateway, key: ChatKey, history: ChatHistory) -> Edit | None:
    """The turn of the marked thread this history edits, or None (not an edit of one)."""
    mark = latest_mark(history.earlier)
    said = [flat(m.content or "") for m in history.earlier if m.role == "user"]
    if mark is None or not said:
        return None  # no thread named, or the first message edited: nothing resent of the old one
    thread = family(key, history.first_user_text) + mark
    try:
        if key.tenant is not None and not sees(key.tenant, await gw.memo(thread)):
            return None
        points = await list_checkpoints(gw.client, thread)
    except RPCError as err:  # no such thread (a mark of a deleted one, say)
        log.info("chat edit: thread %s cannot be read (%s); a new thread opens", thread, err)
        return None
    except Exception:  # a history this process cannot replay: the request still gets a thread
        log.warning("chat edit: the checkpoints of %s cannot be read; a new thread opens",
                    thread, exc_info=True)
        return None
    # what the person said, in order: each turn's message and each answer's words
    inputs = [p for p in points if p.kind in ("turn", "answer")]
    n = len(said)
    if len(inputs) <= n or [flat(p.text or "") for p in inputs[:n]] != said:
        return None  # the thread never got this far, or the history before the edit differs
    edited = inputs[n]
    if edited.kind != "turn" or edited.turn is None or flat(edited.text or "") == flat(history.text):
        return None  # an answer edited (not a turn), or the same words: not forked, as before
    return Edit(thread, edited.turn, edited.id)


def fork_id(key: ChatKey, history: ChatHistory, edit: Edit, keys: RequestKeys) -> str:
    """The fork's id: in the chat's family, its mark derived from the thread and the request,
    so the same request sent again names the same fork."""
    digest = hashlib.sha256(f"{edit.thread}\0{edit.at}\0{keys.this}".encode()).hexdigest()
    return family(key, history.first_user_text) + digest[:MARK_CHARS]


async def begin_fork(gw: Gateway, key: ChatKey, history: ChatHistory, edit: Edit, keys: RequestKeys,
                     max_tokens: int | None = None) -> Callable[[], Awaitable[Outcome]]:
    """Fork `edit.thread` at the start of its turn `edit.turn` with the edited message (or find
    the fork this very request made already); returns what waits for the outcome of the
    fork's first turn, the edited one. `CheckpointError`: that turn cannot be forked."""
    thread = fork_id(key, history, edit, keys)
    try:
        await fork(gw.client, edit.thread, at=edit.at, message=history.text, fork_id=thread,
                   input_id=keys.this)
    except WorkflowAlreadyStartedError:  # this request sent again: its fork answers it
        pass
    return await gw.begin_exchange(thread, history.text, keys.this, max_tokens, again=True, turn=edit.turn)
