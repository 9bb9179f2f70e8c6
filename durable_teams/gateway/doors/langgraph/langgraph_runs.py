"""The LangGraph door's runs: create (in the background), wait, stream, join, join_stream,
cancel, get and list. A run with `input` is a new turn of the thread; a run with
`command={"resume": ...}` answers the interrupt the thread waits on (an approval: a strict yes
or no, as every door) and follows the turn on from there."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.client.refusals import ConversationBusy, TurnConflict
from durable_teams.client.send import submit_turn
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.errors import error
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.tenant_ids import shown
from durable_teams.gateway.core.threads import Gateway, TeamMismatch
from durable_teams.gateway.doors.langgraph.langgraph_checks import page
from durable_teams.gateway.doors.langgraph.langgraph_edits import take_staged
from durable_teams.gateway.doors.langgraph.langgraph_interrupts import interrupting_run
from durable_teams.gateway.doors.langgraph.langgraph_multitask import (
    Busy,
    cancel_update,
    make_room,
    roll_back,
)
from durable_teams.gateway.doors.langgraph.langgraph_queue import turn_start, working_turn
from durable_teams.gateway.doors.langgraph.langgraph_reading import (
    known_run,
    reply_of,
    run_of,
    snapshot,
    turns_known,
)
from durable_teams.gateway.doors.langgraph.langgraph_requests import (
    RunRequest,
    answer_of,
    run_request,
    stream_modes,
)
from durable_teams.gateway.doors.langgraph.langgraph_stream import (
    RunStream,
    subscribed_run,
)
from durable_teams.gateway.doors.langgraph.langgraph_tenancy import thread_in
from durable_teams.gateway.doors.langgraph.langgraph_threads import body_of, gateway_of, new_thread
from durable_teams.gateway.doors.langgraph.langgraph_webhooks import (
    check_webhook,
    watch_run,
    webhook_failure,
)
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    RUN_STATES,
    NotFound,
    RunRef,
    Unsupported,
    parse_run_id,
    run_object,
)
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message


async def begin(request: Request, steps: bool = False) -> tuple[RunStream, RunRequest]:
    """The run the request asks for, begun (and its webhook watching it): its turn accepted by
    the thread (or its answer taken) before this returns, so an acknowledged run is never lost.
    `steps`: subscribed to the thread's announced steps before its turn goes in (a stream)."""
    gw = gateway_of(request)
    asked = run_request(await body_of(request, empty_ok=False))
    gw.check_team(asked.team)
    if asked.webhook is not None:
        asked.webhook = await check_webhook(asked.webhook)  # refused before anything goes in
    run = await begin_run(request, asked, steps)
    run.shown = shown(scope_of(request), run.thread)
    if asked.webhook is not None:  # never raised, but for a cancel: then a stream's subscription closed
        asked.webhook_error = await run.unsubscribed_if_raised(
            watch_run(gw, run.thread, run.run, run.team, asked.webhook, run.shown))
    return run, asked


async def begin_run(request: Request, asked: RunRequest, steps: bool = False) -> RunStream:
    gw, scope = gateway_of(request), scope_of(request)
    thread = request.path_params.get("thread")
    if thread is None:  # a stateless run: a thread of its own (kept, as every thread)
        thread = await new_thread(gw, asked.team, scope, None, {})
    else:
        thread = thread_in(request)
        await thread_for(gw, thread, asked, scope)
    if steps:  # subscribed before the turn goes in: told of its every step
        return await subscribed_run(gw, thread, lambda: run_on(gw, thread, asked, scope))
    return await run_on(gw, thread, asked, scope)


async def run_on(gw: Gateway, thread: str, asked: RunRequest, scope: str | None) -> RunStream:
    """The run begun on `thread`: its turn, or its resume."""
    seen = await snapshot(gw, thread, scope)
    taken = await take_staged(gw, seen, asked.continuing, scope)  # threads.update_state's (langgraph_edits.py)
    if taken is not None:
        asked.text, seen = taken[0], taken[1]
        asked.resuming = asked.continuing = False
    if asked.resuming:
        run = await resume(gw, thread, asked, seen.status, seen.messages)
        run.created = seen.created
        return run
    if asked.strategy == "interrupt":  # every earlier run cancelled first (langgraph_interrupts.py)
        return await interrupting_run(gw, thread, asked, scope)
    if seen.state() in ("busy", "interrupted"):
        await make_room(gw, thread, seen.status, asked.strategy)
        seen = await snapshot(gw, thread, scope)  # after a rollback: the conversation as rewound
    floor, ahead = len(seen.messages), await working_turn(gw, thread, seen.status)
    # "reject": taken only if no other turn got in since the thread was seen idle (two runs at once: one goes in)
    after = seen.status.turns if asked.strategy == "reject" else None
    try:
        accepted = await submit_turn(gw.client, thread, asked.text or "", busy_timeout=gw.busy_seconds,
                                     after_turns=after, interrupt_before=asked.interrupt_before,
                                     interrupt_after=asked.interrupt_after, metadata=asked.metadata)
    except TurnConflict:
        raise Busy(f"thread {thread} took another run meanwhile (multitask_strategy 'reject'; or send "
                   "'enqueue', 'interrupt' or 'rollback')") from None
    except ConversationBusy:
        if asked.strategy != "reject":
            raise
        # Temporal's ten updates in flight were all other runs sent at this moment: one of them is in
        raise Busy(f"thread {thread} is taking another run sent at the same moment (multitask_strategy "
                   "'reject'; or send 'enqueue', 'interrupt' or 'rollback')") from None
    # the turns numbered before it and not yet begun come first: their messages are skipped
    return RunStream(gw, thread, RunRef(accepted.number), asked.team, floor, skip=accepted.number - ahead - 1,
                     messages=seen.messages, created=seen.created)


async def thread_for(gw: Gateway, thread: str, asked: RunRequest, scope: str | None, again: bool = True) -> None:
    """The run's thread, of its team, seen by the caller; made when `if_not_exists` is "create"
    (by another request at the same moment: as if it had been there)."""
    try:
        known = await gw.running(thread, asked.team, scope)
    except TeamMismatch as err:
        raise checks.BadRequest(f"{err}: a thread's assistant is its team", 409) from None
    if not known and not asked.create_thread:
        raise NotFound(f"no thread {thread} (or send if_not_exists='create')")  # by the caller's id in the answer
    if not known:
        try:
            await new_thread(gw, asked.team, scope, thread, {})
        except WorkflowAlreadyStartedError:
            if not again:
                raise
            await thread_for(gw, thread, asked, scope, again=False)  # whose, of which team


async def resume(gw: Gateway, thread: str, asked: RunRequest, status: ConversationStatus,
                 messages: list[Message]) -> RunStream:
    if not status.pending:
        what = "no input, and no breakpoint" if asked.continuing else "no interrupt"
        raise checks.BadRequest(f"{what} waits on thread {thread}: nothing to resume", 409)
    question = status.pending[0]
    if asked.continuing and not question.breakpoint:
        raise checks.BadRequest(f"interrupt {question.question_id} on thread {thread} waits for an answer: "
                                "resume with command={'resume': ...} (a run without input goes on past a "
                                "breakpoint only)", 409)
    if isinstance(asked.resume, dict) and len(asked.resume) == 1:
        named = next(iter(asked.resume))
        question = next((q for q in status.pending if q.question_id == named), question)
    await gw.reply(thread, question.question_id, **answer_of(asked.resume, question))
    seen = {q.question_id for q in status.pending}
    return RunStream(gw, thread, RunRef(await working_turn(gw, thread, status), question.question_id), asked.team, len(messages),
                     start=len(messages), seen=seen, messages=messages)


def located(run: RunStream) -> dict[str, str]:
    return {"Content-Location": f"/threads/{run.shown or run.thread}/runs/{run.run.id}"}


async def create(request: Request) -> Response:
    """A run begun in the background: `pending` as LangGraph says of a new run (its turn
    accepted, not read again), `running` for a resume (its answer taken)."""
    run, asked = await begin(request)
    state = "running" if run.run.resumed is not None else "pending"
    return JSONResponse(run_object(run.shown or run.thread, run.run, run.team, state, run.created, asked.metadata,
                                   {"webhook_error": asked.webhook_error} if asked.webhook_error else None),
                        headers=located(run))


async def followed(request: Request, run: RunStream) -> None:
    """Follow the run until it ends or asks, or until the client leaves (the run goes on; the
    gateway holds nothing for it: a run may wait days for a person)."""
    async def to_its_end() -> None:
        await run.settle()

    async def client_left() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
    following, leaving = asyncio.ensure_future(to_its_end()), asyncio.ensure_future(client_left())
    try:
        await asyncio.wait((following, leaving), return_when=asyncio.FIRST_COMPLETED)
    finally:
        leaving.cancel()
        while not following.done():  # Python 3.11's wait_for (inside follow) may swallow a cancel: again
            following.cancel()
            await asyncio.wait((following,), timeout=0.1)
    if not following.cancelled():
        following.result()  # its error, if it ended with one


async def wait(request: Request) -> Response:
    run, asked = await begin(request)
    await followed(request, run)
    return JSONResponse(run.final_values(), headers=located(run) | webhook_failure(asked.webhook_error))


async def stream(request: Request) -> Response:
    """The run streamed; with `stream_resumable`, a `Location` (relative to the door's root, as
    LangGraph's clients join it to their URL) the client reconnects to with `Last-Event-ID`."""
    if not request.state.open_stream():
        return error(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
    run, asked = await begin(request, steps=True)
    headers = located(run) | webhook_failure(asked.webhook_error)
    if asked.resumable:  # the modes in it: a reconnect sends no body
        modes = urlencode([("stream_mode", mode) for mode in asked.modes])
        headers["Location"] = f"/threads/{run.shown or run.thread}/runs/{run.run.id}/stream?{modes}"
    return run.response(asked.modes, None, headers, scope_of(request))


async def existing(request: Request) -> RunStream:
    """The run named in the path, to follow from its turn's start."""
    gw, scope = gateway_of(request), scope_of(request)
    seen = await snapshot(gw, thread_in(request), scope)
    run = parse_run_id(request.path_params["run"])
    await known_run(gw, seen, run)  # NotFound for a run the thread never had
    team, ahead = seen.team or "", await working_turn(gw, seen.thread, seen.status)
    if run.turn <= ahead:  # begun: from its message
        start = await turn_start(gw, seen.thread, seen.messages, run.turn, ahead)
        return RunStream(gw, seen.thread, run, team, start, start=start, messages=seen.messages, shown=seen.shown)
    return RunStream(gw, seen.thread, run, team, len(seen.messages), skip=run.turn - ahead - 1,
                     messages=seen.messages, shown=seen.shown)


async def get(request: Request) -> Response:
    gw = gateway_of(request)
    seen = await snapshot(gw, thread_in(request), scope_of(request))
    return JSONResponse(await run_of(gw, seen, parse_run_id(request.path_params["run"])))


async def join(request: Request) -> Response:
    run = await existing(request)
    await followed(request, run)
    return JSONResponse(run.final_values())


async def join_stream(request: Request) -> Response:
    """A run's stream joined: from its turn's start, or after the frame `Last-Event-ID` names."""
    if not request.state.open_stream():
        return error(429, "too many open streams for this caller; try again later", "rate_limit_exceeded")
    if request.query_params.get("cancel_on_disconnect", "false").lower() not in ("false", "0"):
        raise Unsupported("cancel_on_disconnect (a run goes on when its stream is left)")
    run = await existing(request)
    modes = request.query_params.getlist("stream_mode") or ["values"]
    after = request.headers.get("last-event-id") or None
    return run.response(stream_modes(modes), after, None, scope_of(request))


async def listed(request: Request) -> Response:
    gw = gateway_of(request)
    seen = await snapshot(gw, thread_in(request), scope_of(request))
    offset, limit = page(request.query_params)
    wanted = request.query_params.get("status")
    if wanted is not None and wanted not in RUN_STATES:
        raise checks.BadRequest(f"'status' is one of {', '.join(RUN_STATES)}")
    numbers = list(range(turns_known(seen.status), 0, -1))[offset:offset + limit]
    runs = [await run_of(gw, seen, RunRef(n)) for n in numbers]
    return JSONResponse([r for r in runs if wanted is None or r["status"] == wanted])


async def cancel(request: Request) -> Response:
    """Cancel a run: "interrupt" stops its turn (the thread goes on), "rollback" rewinds the
    thread to before it (the run is gone: its id names the next run of the thread)."""
    gw = gateway_of(request)
    action = request.query_params.get("action", "interrupt")
    if action not in ("interrupt", "rollback"):
        raise Unsupported(f"cancel action={action[:40]!r}")
    run = await existing(request)
    seen = await snapshot(gw, run.thread, scope_of(request))
    if await reply_of(gw, run.thread, run.run.turn) is not None:
        return error(409, f"run {run.run.id} has ended: nothing to cancel", "run_ended")
    if action == "rollback":
        await roll_back(gw, run.thread, run.run.turn)
        return JSONResponse(run_object(seen.shown, run.run, run.team, "interrupted", seen.created))
    try:
        await cancel_update(gw, run.thread, run.run.turn)
    except WorkflowUpdateFailedError as err:
        return error(409, f"run {run.run.id} cannot be cancelled: {getattr(err.cause, 'message', err)}",
                     "run_ended")
    if request.query_params.get("wait") in ("1", "true"):
        await followed(request, run)
    seen = await snapshot(gw, run.thread, scope_of(request))
    return JSONResponse(await run_of(gw, seen, run.run))
