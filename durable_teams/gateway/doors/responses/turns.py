"""How a Responses request goes into its thread: a new thread's first turn, the next turn or
the answer to a question on the thread's latest response (`previous_response_id`), or a whole
conversation resent by a client that keeps no response ids (found, or opened, with the chat
path's matching: durable_teams/gateway/core/resent_threads.py)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.client.send import submit_turn
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.idempotency import (
    Claim,
    KeyedInput,
    KeyReused,
    input_id,
    sent_keyed,
    start_once,
    taken,
)
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.threads import Gateway, TeamMismatch
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses import state as state
from durable_teams.gateway.doors.responses.events import approval_id
from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse, View
from durable_teams.workflows.conversation import TeamWorkflow

T = TypeVar("T")


def refusal(status: int, message: str, kind: str, param: str | None = None, **more: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": kind, **more}},
                        status_code=status)


class Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        super().__init__()
        self.response = response


class NotLatest(Refused):
    """`previous` is not its thread's latest response (`latest` is): a fork may continue it."""

    def __init__(self, previous: ResponseRef, latest: View, ended_turn: bool) -> None:
        why = ("" if ended_turn else
               f" ({previous.id} ended at a question inside its turn, answered since: a fork "
               "starts at a turn's end)")
        super().__init__(refusal(409, f"{previous.id} is not the thread's latest response: continue "
                                      f"from {latest.ref.id}{why}", "not_latest_response",
                                 "previous_response_id", latest_response_id=latest.ref.id))
        self.previous, self.latest, self.ended_turn = previous, latest, ended_turn


class AskedAgain(Exception):
    """An answer to an approval that is not a plain yes or no: nothing is sent, the approval
    stays open, and the response asking it (`ref`) is given again, its text asking again
    (`ask_again(tool)`), so a client shows the question in the conversation."""

    def __init__(self, ref: ResponseRef, tool: str) -> None:
        super().__init__(ask_again(tool))
        self.ref, self.tool = ref, tool


def first_thread(team: str, key: str | None, request: Request) -> str:
    """The thread a first request opens: the same for the same Idempotency-Key and caller."""
    return f"{team_part(team)}-resp-{idempotency_digest(key, request) or uuid.uuid4().hex[:16]}"


def idempotency_digest(key: str | None, request: Request) -> str | None:
    return hashlib.sha256(f"{getattr(request.state, 'caller', '')}\0{key}".encode()).hexdigest()[:16] if key else None


async def first_turn(gw: Gateway, team: str, thread: str, text: str, key: str | None, request_id: str,
                     max_tokens: int | None, request: Request, user: str | None = None) -> ResponseRef:
    """`thread` (`first_thread`) started for `user` and its first turn (the same again for the
    same Idempotency-Key)."""
    keyed = idempotency_digest(key, request)
    if keyed is not None and await gw.keyed_by_another_team(team, keyed, "resp-") is not None:
        raise Refused(refusal(409, "this Idempotency-Key was sent with another request (for another team): "
                                   "use a new key", "idempotency_key_reused"))

    async def start(memo: dict[str, str] | None = None) -> None:
        await gw.start_thread(team, thread, memo=memo, scope=scope_of(request), user=user)
    try:  # the same key: the same request (a retry, its turn found by its input id), or a key used again
        await (start() if keyed is None else start_once(gw.client, thread, Claim(keyed, request_id[:16]), start))
    except (KeyReused, WorkflowAlreadyStartedError):
        raise Refused(refusal(409, "this Idempotency-Key was sent with another request: use a new key",
                              "idempotency_key_reused")) from None
    accepted = await submit_turn(gw.client, thread, text, turn_id=input_id(thread, "responses", request_id),
                                 busy_timeout=gw.busy_seconds, max_tokens=max_tokens)
    return ResponseRef(thread, accepted.number, 0, 0)


async def following(gw: Gateway, team: str, previous: ResponseRef, given: fields.Input,
                    turn_id: str, max_tokens: int | None, deleted_too: bool = False,
                    keyed: KeyedInput | None = None, earlier_id: str | None = None) -> ResponseRef:
    """The response to a request continuing `previous`: an answer to its question, or the
    thread's next turn. Only the thread's latest response may be continued (409 naming it); the
    same request sent again gets the response it made the first time. `keyed`: the input goes
    in under its Idempotency-Key's update (`turn_id` is its id; durable_teams/gateway/core/
    idempotency.py); `earlier_id`: the id the same request went in under before (an earlier
    release's), by which its retry is found too."""
    thread = previous.thread
    try:
        if not await gw.running(thread, team):
            raise UnknownResponse(f"no response {previous.id!r}")
    except TeamMismatch as mismatch:
        raise checks.BadRequest(str(mismatch)) from None
    view, status, after = await state.latest(gw, previous, deleted_too)
    if after is not None:  # continued already: by this very request (a retry), or another
        for sent in (turn_id, earlier_id) if earlier_id else (turn_id,):
            if await taken(gw, thread, sent) == after.turn:  # however late (the ids the thread took)
                return after
        if after.step == 0 and await gw.client.get_workflow_handle(thread).query(
                TeamWorkflow.turn_number, turn_id) == after.turn:
            return after
        if after.step > 0 and turn_id in (status.last_input_id, status.previous_input_id):
            return after
        raise NotLatest(previous, view, ended_turn=after.step == 0)
    if not view.ended:
        raise Refused(refusal(409, f"{previous.id} is still {view.status}: wait for it (GET "
                                   f"/v1/responses/{previous.id}) or cancel it", "response_in_progress",
                              "previous_response_id"))
    assert view.end is not None
    update_key = keyed.prefix if keyed else None
    if view.stop is not None:  # the question it asked waits: this request answers it
        await sent_once(gw, thread, keyed, answer(gw, view, status, given, turn_id, update_key))
        return ResponseRef(thread, previous.turn, view.end, previous.step + 1)
    if given.text is None:
        raise FieldError(f"'input': {previous.id} asked for no approval", "input")
    accepted = await sent_once(gw, thread, keyed, submit_turn(
        gw.client, thread, given.text, turn_id=turn_id, busy_timeout=gw.busy_seconds, max_tokens=max_tokens,
        after_turns=status.turns, update_key=update_key))
    return ResponseRef(thread, accepted.number, view.end, 0)


async def sent_once(gw: Gateway, thread: str, keyed: KeyedInput | None, sending: Awaitable[T]) -> T:
    """`sending` awaited; under a key (`sent_keyed`), a twin request's input taken instead is
    the 409 a reused key is."""
    if keyed is None:
        return await sending
    try:
        return await sent_keyed(gw.client, thread, keyed, lambda: sending)
    except KeyReused as reused:
        raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None


async def answer(gw: Gateway, view: View, status: Any, given: fields.Input, input_id_: str,
                 update_key: str | None = None) -> None:
    """Answer the question `view` ended with. An approval takes an `mcp_approval_response`
    naming it, or a message that is a clear yes or no (client/approvals.py); anything else is
    a 400, and nothing is sent."""
    stop = view.stop
    assert stop is not None
    question = next((q for q in status.pending if q.tool_call_id == stop.call.id), None)
    if question is None:  # answered (or withdrawn) since it was read
        raise Refused(refusal(409, f"{view.ref.id}'s question was answered meanwhile: read the thread's "
                                   "latest response", "not_latest_response", "previous_response_id"))
    reply: dict[str, Any] = {"input_id": input_id_}
    if stop.approval:
        if given.approval_id is not None:
            if given.approval_id != approval_id(stop.call.id):
                raise FieldError(f"'input': no approval {given.approval_id!r} waits; "
                                 f"{approval_id(stop.call.id)!r} does", "input")
            reply |= {"approved": given.approve, "text": given.reason}
        else:
            decided = approval_of(given.text or "")
            if decided is None:  # "yes if it is under $20": asked again, as the other doors do
                raise AskedAgain(view.ref, stop.call.name)
            reply |= {"approved": decided, "text": given.text or ""}
    else:
        if given.text is None:
            raise FieldError("'input': the question waiting is not an approval: answer it with a message", "input")
        reply["text"] = given.text
    await gw.reply(view.ref.thread, question.question_id, update_key, **reply)
