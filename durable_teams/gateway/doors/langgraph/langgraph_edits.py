"""`threads.update_state` as LangGraph users use it for time travel and human edits: the
user's message edited at the checkpoint where it is the last one (its turn's start), or a new
user message added to an idle thread. As in LangGraph the update runs nothing: it is kept
with the thread (in its memo, `STAGED_MEMO`) and shown by `get_state` and `get_history` as a
new checkpoint, child of the one named; the next run with `input=None` takes it. An edit is
taken by a rewind of the same thread to the end of the turn before (client/time_travel.py's
`rewind`: the branch it leaves stays readable as an earlier run of the thread) and the edited
message sent as the next turn; an added message is sent as the next turn.

Everything else is refused by name (422): editing an assistant's, a tool's or a system message
(a team's replies are its runs' own), `as_node` (a team's agents write its messages), values
other than `messages`, several messages at once, editing a message that has replies after it
at the checkpoint named, and editing the first message of a thread that did not begin empty
(a fork's, or one started with a message: fork it, the gateway's `POST /threads/{id}/fork`).
The first message of a thread made by `threads.create` is edited by a rewind to its start
(client/rewind_start.py)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from durable_teams.client.replay_state import ReplayFailed
from durable_teams.client.rewind_start import first_step, rewind_to_start
from durable_teams.client.time_travel import (
    Checkpoint,
    CheckpointError,
    find,
    list_checkpoints,
    rewind,
    transcripts_at,
)
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_reading import Snapshot, snapshot
from durable_teams.gateway.doors.langgraph.langgraph_tenancy import thread_in
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    NotFound,
    Unsupported,
    message_id,
    values_of,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ClientMetadata

STAGED_CLIENT = "langgraphedit"
STAGED_MEMO = f"{STAGED_CLIENT}_metadata"
"""The memo key of the update a run with `input=None` takes next (`TeamWorkflow.set_client_metadata`)."""
MAX_EDIT_BYTES = 12 * 1024
"""The longest message an update keeps (as JSON), within the memo's 16 KiB for a client's notes."""
TAKING: dict[str, asyncio.Lock] = {}
"""Threads whose update a run of this gateway is taking: one at a time."""
START_NODES = (None, "__start__", "__input__")
"""The `as_node` values that mean the user's input (LangGraph's own names for it)."""


@dataclass(frozen=True)
class Staged:
    """An update waiting for a run: `text` the user's message; `at` the checkpoint of the turn
    whose message it replaces (None: a message added after the latest); `turns` the turns the
    thread had numbered when it was made (another run since makes it stale)."""

    text: str
    at: str | None
    turns: int
    parent: str | None
    agent: str | None
    first: bool = False
    """An edit of the thread's first message: taken by a rewind to the thread's start."""

    @property
    def checkpoint_id(self) -> str:
        return f"{self.parent or 'start'}+{'edit' if self.at else 'input'}"


def staged_of(seen: Snapshot) -> Staged | None:
    """The update waiting on the thread, if no run changed the thread since it was made."""
    kept = seen.memo.get(STAGED_MEMO)
    if not isinstance(kept, dict) or not isinstance(kept.get("text"), str):
        return None
    staged = Staged(kept["text"], kept.get("at"), kept.get("turns", -1), kept.get("parent"), kept.get("agent"),
                    kept.get("first") is True)
    return staged if staged.turns == seen.status.turns and seen.state() == "idle" else None


def edit_of(body: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """The update's user message (its text, the id it replaces or None) and the checkpoint id named."""
    unknown = sorted(k for k, v in body.items() if v is not None and k not in ("values", "checkpoint",
                                                                                 "checkpoint_id", "as_node"))
    if unknown:
        raise Unsupported(f"threads.update_state parameter(s) {', '.join(unknown)}")
    if body.get("as_node") not in START_NODES:
        raise Unsupported(f"threads.update_state as_node={body.get('as_node')!r} (a team's agents write its "
                          "replies: an update here is the user's message, as_node left out)")
    values = body.get("values")
    if not isinstance(values, dict) or set(values) != {"messages"}:
        raise Unsupported("threads.update_state values other than {'messages': [one user message]} "
                          "(a team's state is its conversation)")
    messages = values["messages"]
    messages = [messages] if isinstance(messages, dict) else messages
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict):
        raise Unsupported("threads.update_state with several messages (one user message an update)")
    message = messages[0]
    kind = message.get("type") or message.get("role")
    if kind not in ("human", "user"):
        raise Unsupported(f"threads.update_state of a {kind!r} message (a team's replies and tool results are "
                          "its runs' own: edit the user's message, or resume a breakpoint with edits)")
    text = message.get("content")
    if not isinstance(text, str) or not text.strip():
        raise checks.BadRequest("the message's 'content' is its text (not empty)")
    if len(json.dumps(text).encode()) > MAX_EDIT_BYTES:
        raise checks.BadRequest(f"the message is over {MAX_EDIT_BYTES // 1024} KiB: an update is kept with the "
                                "thread until its run, in the thread's memo (a run's input takes up to "
                                f"{checks.MAX_TURN_BYTES // 1024} KiB)", 413)
    given = message.get("id")
    checkpoint = body.get("checkpoint")
    at = checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else body.get("checkpoint_id")
    if at is not None and not isinstance(at, str):
        raise checks.BadRequest("'checkpoint' is {'checkpoint_id': ...}, a checkpoint of the thread's history")
    return text, given if isinstance(given, str) else None, at


async def update_state(request: Request) -> Response:
    """`threads.update_state`: the update kept for the next run (`Staged`), as a new checkpoint."""
    gw: Gateway = request.app.state.gateway
    thread = thread_in(request)
    text, replaced, at = edit_of(checks.parse_body(await request.body()))
    seen = await snapshot(gw, thread, scope_of(request))
    if seen.state() != "idle":
        raise checks.BadRequest(f"thread {thread} is {seen.state()}: update_state changes an idle thread "
                                "(wait for its run, or resume its interrupt)", 409)
    try:
        points = await list_checkpoints(gw.client, thread)
        point = named(points, thread, at) if at is not None else (points[-1] if points else None)
        messages = seen.messages if point is None or point is points[-1] and point.kind != "turn" else \
            with_turn(point, (await transcripts_at(gw.client, thread, [point])).get(point.id, []))
    except CheckpointError as err:
        raise checks.BadRequest(str(err)) from None
    except ReplayFailed as err:
        raise checks.BadRequest(f"this thread's history does not replay here: {err}", 409) from None
    ids = [message_id(m, i) for i, m in enumerate(messages)]
    if replaced in ids:
        staged = edit_at(thread, points, point, messages, ids.index(replaced), text, seen.status.turns)
    else:  # a new message (LangGraph's reducer appends a message of an id it does not hold)
        if point is not None and point is not points[-1]:
            raise Unsupported("threads.update_state adding a message at a past checkpoint (add it at the "
                              "latest one, or edit the message of that checkpoint's turn by its id)")
        staged = Staged(text, None, seen.status.turns, point.id if point else None,
                        turn_agent(points, point) if point else None)
    if staged.first:  # before the first turn: the thread's start, if it began empty
        try:
            await first_step(gw.client, thread)
        except CheckpointError as err:
            raise Unsupported(f"threads.update_state of thread {thread}'s first message ({err}: fork it with "
                              f"the edit, POST /threads/{thread}/fork {{\"at\": \"{staged.at}\", "
                              "\"message\": ...}})") from None
    await gw.require_worker()
    await gw.client.get_workflow_handle(thread).execute_update(TeamWorkflow.set_client_metadata, ClientMetadata(
        client=STAGED_CLIENT, metadata={"text": staged.text, "at": staged.at, "turns": staged.turns,
                                        "parent": staged.parent, "agent": staged.agent, "first": staged.first}))
    return JSONResponse({"checkpoint": {"thread_id": seen.shown, "checkpoint_ns": "",
                                        "checkpoint_id": staged.checkpoint_id, "checkpoint_map": None}})


def named(points: list[Checkpoint], thread: str, checkpoint_id: str) -> Checkpoint:
    """The checkpoint of the thread with exactly this id (no other spelling of it: with
    spaces, in capitals, with leading zeros or other digits), else `NotFound` (404)."""
    try:
        return find(points, thread, checkpoint_id)
    except CheckpointError:
        raise NotFound(f"no checkpoint {checkpoint_id[:120]!r} on thread {thread}: list them with "
                       "threads.get_history") from None


def with_turn(point: Checkpoint, transcript: list[Message]) -> list[Message]:
    """The state at `point` as LangGraph shows it: at a turn's start (the conversation as the
    turn was taken), its user message is the last one, and the turn's agent runs next."""
    if point.kind != "turn" or point.text is None:
        return transcript
    return [*transcript, Message(role="user", content=point.text)]


def turn_agent(points: list[Checkpoint], point: Checkpoint) -> str | None:
    """The agent that answers the turn begun at `point` (`points` oldest first): the one
    active then, or (a thread's first turn) the first that made a step of it."""
    later = points[points.index(point):] if point in points else [point]
    return next((p.agent for p in later if p.agent and p.turn == point.turn), None)


def edit_at(thread: str, points: list[Checkpoint], point: Checkpoint | None, messages: list[Message],
            index: int, text: str, turns: int) -> Staged:
    """The edit of message `index` of the state at `point`: the user's message of its turn, the
    last message there (its turn's start), with a turn before it to rewind to."""
    message = messages[index]
    if message.role != "user" or message.kind != "message":
        kind = {"assistant": "ai", "tool": "tool", "system": "system"}.get(message.role, message.role)
        raise Unsupported(f"threads.update_state of a {kind!r} message (a team's replies and tool results are "
                          "its runs' own: edit the user's message, or resume a breakpoint with edits)")
    if point is None or point.kind != "turn" or index != len(messages) - 1:
        start = next((p.id for p in points if p.kind == "turn" and p.text == message.content), None)
        raise Unsupported("threads.update_state of a message with replies after it at this checkpoint (edit it "
                          "at its turn's start, where it is the last message" + (f": checkpoint {start})" if start
                                                                                 else ")"))
    first = not any(p.kind == "turn_end" and p.turn == (point.turn or 0) - 1 for p in points)
    return Staged(text, point.id, turns, point.id, turn_agent(points, point), first)


async def staged_values(gw: Gateway, seen: Snapshot, staged: Staged) -> dict[str, Any]:
    """The thread's values with the update: the conversation at its checkpoint, the message in place."""
    messages = seen.messages
    if staged.at is not None:  # the conversation at the turn's start, but its message
        points = await list_checkpoints(gw.client, seen.thread)
        point = find(points, seen.thread, staged.at)
        messages = (await transcripts_at(gw.client, seen.thread, [point])).get(point.id, [])
    return values_of([*messages, Message(role="user", content=staged.text)])


async def take_staged(gw: Gateway, seen: Snapshot, continuing: bool, scope: str | None) -> tuple[str, Snapshot] | None:
    """For a run on the thread: the update it takes (its text, and the thread as the run starts
    from it: rewound for an edit), or None when none waits. A run with input while an update
    waits is refused (LangGraph would answer both at once; a team answers one message a turn).
    Two runs at once take it once: the second, seeing it taken, goes on as a run with no input."""
    staged = staged_of(seen)
    if staged is None:
        return None
    if not continuing:
        raise checks.BadRequest(f"thread {seen.thread} holds an update (threads.update_state, checkpoint "
                                f"{staged.checkpoint_id}): run it with input=None first", 409)
    lock = TAKING.setdefault(seen.thread, asyncio.Lock())
    try:
        async with lock:
            return await _take(gw, await snapshot(gw, seen.thread, scope), scope)
    finally:
        if not lock.locked():
            TAKING.pop(seen.thread, None)


async def _take(gw: Gateway, seen: Snapshot, scope: str | None) -> tuple[str, Snapshot] | None:
    staged = staged_of(seen)  # as it is now: another run may have taken it
    if staged is None:
        return None
    if staged.at is not None:
        try:
            if staged.first:
                await rewind_to_start(gw.client, seen.thread, reason="LangGraph threads.update_state")
            else:
                await rewind(gw.client, seen.thread, to=staged.at, reason="LangGraph threads.update_state")
        except CheckpointError as err:
            raise checks.BadRequest(f"the update cannot be taken: {err}", 409) from None
    seen = await snapshot(gw, seen.thread, scope)
    kept = seen.memo.get(STAGED_MEMO)
    if isinstance(kept, dict) and kept.get("text"):  # not undone by the rewind: taken once
        await gw.client.get_workflow_handle(seen.thread).execute_update(
            TeamWorkflow.set_client_metadata, ClientMetadata(client=STAGED_CLIENT, metadata={"text": None}))
    return staged.text, seen
