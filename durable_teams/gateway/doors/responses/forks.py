"""A `previous_response_id` that is not its thread's latest: the thread is forked there.

A response that ended its turn (a reply, not a question) is continued from that turn's end as
a fork (durable_teams/client/time_travel.py): a new thread whose state is the original's at
the turn's end, so no model or tool call before it runs again and the original gains no event.
The request then continues the same response in the fork, which inherited the log up to it:
its ref names the fork's thread with the same turn and log index. The fork's id is derived
from the caller, the response and the request (under an Idempotency-Key, the key, the request
in its memo: durable_teams/gateway/core/idempotency.py, `start_once`), so the same request sent
again finds the same fork and its response, never a second one.

A response that ended at a question is inside its turn; forks start at turn boundaries, so
continuing one that was answered already is a 409 naming the thread's latest response.
"""

from __future__ import annotations

import hashlib
import logging

from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.thread_ids import team_part
from durable_teams.client.time_travel import CheckpointError, fork, list_checkpoints
from durable_teams.gateway.core.idempotency import Claim, KeyReused, input_id, start_once
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.gateway.doors.responses.turns import NotLatest, Refused, following, refusal

log = logging.getLogger("durable_teams.gateway")


def fork_thread_id(team: str, previous: ResponseRef, scope: str, request_id: str) -> str:
    """The fork a request continuing `previous` makes: the same for the same request."""
    digest = hashlib.sha256(f"fork\0{scope}\0{previous.id}\0{request_id}".encode()).hexdigest()
    return f"{team_part(team)}-resp-{digest[:16]}"


async def forked(gw: Gateway, team: str, not_latest: NotLatest, given: fields.Input, scope: str,
                 request_id: str, max_tokens: int | None, claim: Claim | None = None) -> ResponseRef:
    """The response to `given` on a fork of the thread at the end of `previous`'s turn. Under
    an Idempotency-Key (`claim`), the fork is the key's (`start_once`): another request under
    it is a 409, never a second fork."""
    previous = not_latest.previous
    if not not_latest.ended_turn:
        raise not_latest
    thread = await _fork_id(gw, team, previous, scope, request_id, claim)
    try:
        points = await list_checkpoints(gw.client, previous.thread)
        at = next((p.id for p in points if p.kind == "turn_end" and p.turn == previous.turn), None)
        if at is None:  # its turn ended, but the history does not say so yet: say which is latest
            raise not_latest

        async def start(memo: dict[str, str] | None = None) -> None:
            await fork(gw.client, previous.thread, at=at, fork_id=thread, memo=memo)
        await (start() if claim is None else start_once(gw.client, thread, claim, start))
    except KeyReused as reused:
        raise Refused(refusal(409, reused.detail, "idempotency_key_reused")) from None
    except WorkflowAlreadyStartedError:  # this request sent again: its fork answers it
        memo = await gw.memo(thread)
        if not str(memo.get("forked_from", "")).startswith(f"{previous.thread}@"):
            raise Refused(refusal(409, f"thread {thread} exists and is no fork of {previous.thread}",
                                  "already_exists", "previous_response_id")) from None
    except CheckpointError as err:  # the next turn had been queued in the same step
        raise Refused(refusal(409, f"{previous.id} cannot be forked: {err}", "not_forkable",
                              "previous_response_id")) from None
    except ReplayFailed as err:
        log.warning("responses: %s does not replay here; no fork", previous.thread, exc_info=True)
        raise Refused(refusal(409, f"{previous.id} cannot be forked: its thread's history does not "
                                   f"replay here ({err})", "not_forkable", "previous_response_id")) from None
    inherited = ResponseRef(thread, previous.turn, previous.start, previous.step)
    return await following(gw, team, inherited, given, input_id(thread, "responses", request_id), max_tokens)


async def _fork_id(gw: Gateway, team: str, previous: ResponseRef, scope: str, request_id: str,
                   claim: Claim | None) -> str:
    """The fork's id: named by the request, or under a key by the key (unless an earlier
    release made this request's fork under the request's name: that one answers it)."""
    named = fork_thread_id(team, previous, scope, request_id)
    if claim is None:
        return named
    try:
        await gw.memo(named)
        return named
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
    return fork_thread_id(team, previous, scope, f"key\0{claim.keyed}")
