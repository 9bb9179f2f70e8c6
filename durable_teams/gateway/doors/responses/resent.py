"""A Responses request that resends a whole conversation (a client that keeps no response ids):
its thread found by the chat path's matching (durable_teams/gateway/core/resent_threads.py), or
a new one that opens with the earlier messages.

Under an Idempotency-Key it is one request however often and however late it is sent, as the
chat door's resent history is (durable_teams/gateway/doors/openai_chat/resent.py): the key's
record (durable_teams/gateway/core/idempotency.py, `claim_record`) names the thread its input
went to, so a retry after that thread moved on is its first response, nothing sent; a new
thread's id is derived from the key and the request, so twins sent at once start one thread
and send one input (the same turn id)."""

from __future__ import annotations

from starlette.requests import Request
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.refusals import ConversationEnded, QuestionClosed, TurnConflict
from durable_teams.client.send import submit_turn
from durable_teams.gateway.core import resent_history as chats
from durable_teams.gateway.core import resent_threads as chat_threads
from durable_teams.gateway.core.idempotency import Claim, KeyReused, claim_record, recorded, taken
from durable_teams.gateway.core.resent_threads import MATCH_ATTEMPTS, says_retry
from durable_teams.gateway.core.scopes import caller_scope, scope_of
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.gateway.doors.responses.turns import Refused, following, refusal

ROUTE = "responses"
"""The route its key's records are kept under (one key, one request, on every Responses path)."""


async def resent(gw: Gateway, team: str, conversation: list[dict[str, str]], request: Request,
                 max_tokens: int | None, user: str | None = None, claim: Claim | None = None) -> ResponseRef:
    """The response to a conversation resent whole: on the thread it continues (the chat
    path's matching; one end user's, as on the chat door), or on a new thread that opens with
    its earlier messages, speaking for `user`. `claim`: its Idempotency-Key's."""
    history = chats.without_asked_again(chats.chat_history(conversation))  # the thread never took those
    key = chats.chat_key(caller_scope(request), team, history, user=user, tenant=scope_of(request))
    keys = chats.request_keys(key, history)
    if claim is not None and (first := await _recorded(gw, claim)) is not None:
        number = await taken(gw, first, keys.this)
        if number is not None:  # this very request, sent again however late: its response, nothing sent
            start = await gw.turn_start(first, number, (await gw.status(first)).turns)
            return ResponseRef(first, number, start or 0, 0)
    for _ in range(MATCH_ATTEMPTS):
        match = await chat_threads.find_thread(gw, key, history, retry=says_retry(request), keys=keys,
                                               wait_seconds=gw.chat_lookup_seconds)
        if match is None:
            break
        latest = await state.latest_of_thread(gw, match.thread)
        if latest is None:
            break
        if match.again:  # this very request, sent again: the response it made
            return latest
        try:
            await _record(gw, claim, match.thread)
            return await following(gw, team, latest, fields.Input(text=history.text), keys.this, max_tokens,
                                   deleted_too=True)  # matched by its messages, not by a response id
        except (TurnConflict, ConversationEnded, QuestionClosed, Refused):  # another request got in first
            continue
    seed = f"{claim.keyed}\0{keys.this}" if claim is not None else None
    thread = chats.new_thread_id(key, history, seed)
    await _record(gw, claim, thread)
    try:
        await gw.start_thread(team, thread, history=history.earlier, idle_close_seconds=gw.chat_idle_seconds,
                              scope=scope_of(request), user=user)
    except WorkflowAlreadyStartedError:
        if seed is None:
            raise
        # this very request started it (sent again, or its twin at once): the same turn id is the same turn
    accepted = await submit_turn(gw.client, thread, history.text, turn_id=keys.this,
                                 busy_timeout=gw.busy_seconds, max_tokens=max_tokens)
    return ResponseRef(thread, accepted.number, len(history.earlier), 0)


async def _recorded(gw: Gateway, claim: Claim) -> str | None:
    """The thread the key's request went to, when this is that request sent again (an earlier
    release's record names none); a 409 when the key stood for another request."""
    try:
        first = await recorded(gw.client, ROUTE, claim.keyed, claim.request)
    except KeyReused as reused:
        raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None
    return first.thread if first is not None and first.thread else None


async def _record(gw: Gateway, claim: Claim | None, thread: str) -> None:
    """Just before the input goes into `thread`: the key recorded as this request's, going there."""
    if claim is None:
        return
    try:
        await claim_record(gw.client, gw.task_queue, ROUTE, claim.keyed, claim.request, thread)
    except KeyReused as reused:
        raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None
