"""Time travel: list a conversation's checkpoints, fork a new conversation from one, rewind.

- `list_checkpoints(client, id)`: every checkpoint, read from history (client/checkpoints.py).
- `fork(client, id, at=..., message=...)`: a new conversation whose state is the original's at
  a turn's start or end, rebuilt by replaying the original's history cut at that checkpoint in
  this process, and carried into the new run's input (as continue-as-new carries a
  conversation). No model or tool call of the prefix runs again; the original is untouched.
- `rewind(client, id, to=...)`: the same thread continues from a checkpoint (a Temporal reset);
  the abandoned branch stays readable as the earlier run of the same workflow id.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, ResetReapplyExcludeType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.common import WorkflowIDReusePolicy

from durable_teams.client.checkpoints import (
    Checkpoint,
    CheckpointError,
    checkpoints_of,
    list_checkpoints,
    run_histories,
    run_tag,
    runs,
)
from durable_teams.client.fork_state import state_inside_turn
from durable_teams.client.replay_state import replay_history
from durable_teams.client.start import start_conversation
from durable_teams.client.thread_ids import derived_id
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput

INSIDE = ("model", "tool", "answer")
"""Checkpoints inside a turn: a fork there continues the turn (client/fork_state.py)."""
NOT_INHERITED = ("idempotency", "request")
"""Memo keys of the original a fork leaves out: they name the request that started it."""

__all__ = ["Checkpoint", "CheckpointError", "Forked", "fork", "fork_input", "list_checkpoints", "rewind",
           "transcripts_at"]


@dataclass(frozen=True)
class Forked:
    """A fork started: its thread id, and where it came from (`<thread id>@<checkpoint id>`)."""

    workflow_id: str
    forked_from: str
    first_turn: str | None
    """The message the fork's first turn answers (the edited one), if any."""


def find(points: list[Checkpoint], workflow_id: str, checkpoint_id: str) -> Checkpoint:
    """The checkpoint `checkpoint_id` of `points`, or a `CheckpointError` that says why not."""
    for point in points:
        if point.id == checkpoint_id:
            return point
    runs = {p.id.split(".")[0] for p in points}
    if checkpoint_id.split(".")[0] not in runs:
        raise CheckpointError(f"{checkpoint_id!r} is not a checkpoint of thread {workflow_id} "
                              f"(list them: durable-teams checkpoints {workflow_id})")
    raise CheckpointError(f"thread {workflow_id} has no checkpoint {checkpoint_id!r} "
                          f"(list them: durable-teams checkpoints {workflow_id})")


async def fork(client: Client, workflow_id: str, at: str | None = None, message: str | None = None,
               fork_id: str | None = None, input_id: str | None = None,
               memo: Mapping[str, str] | None = None) -> Forked:
    """Start a new conversation from `workflow_id`'s checkpoint `at` (default: its latest turn
    end). At a turn's start, the fork answers that turn again, with `message` in place of its
    text if given (edit and regenerate); at a turn's end, `message` (if given) is its next turn;
    inside a turn (a model reply, a tool result, an answer), the fork continues that turn.
    `input_id`: the id the fork's first turn is recorded under (`status.last_input_id`), for a
    client that finds its thread by it (a chat client's edit, durable_teams/gateway/doors/openai_chat/edits.py).
    `memo`: kept in the fork's memo besides what it inherits (a keyed request's claim).
    Raises `CheckpointError` for a checkpoint of another thread, or a message inside a turn."""
    read = await run_histories(client, workflow_id)
    points = await checkpoints_of(client, read)
    histories = {_run_of(h): h for h in read}
    try:
        point, _, message = _fork_point(points, workflow_id, at, message)
    except CheckpointError:
        if at is not None:
            _refuse_a_childs(list(histories.values()), points, workflow_id, at)
        raise
    if point.run_id not in histories:  # inherited by this fork: fork it where it was made
        origin_id = await _origin_of(client, workflow_id)
        return await fork(client, origin_id, at=point.id, message=message, fork_id=fork_id,
                          input_id=input_id, memo=memo)
    inp = await fork_input(client, workflow_id, list(histories.values()), points, point.id,
                           message, input_id)
    origin, first = inp.forked_from or "", next(iter(histories.values()))
    started = first.events[0].workflow_execution_started_event_attributes
    new_id = fork_id or derived_id(workflow_id, f"-fork-{uuid.uuid4().hex[:8]}")
    team = inp.team.name if inp.team else inp.team_name or ""
    inherited = await _inherited_memo(client, workflow_id)
    await start_conversation(client, team, inp, id=new_id, task_queue=started.task_queue.name,
                             memo={**inherited, **(memo or {}), "forked_from": origin},
                             id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
    return Forked(new_id, origin, inp.task)


async def fork_input(client: Client, workflow_id: str, histories: list[WorkflowHistory],
                     points: list[Checkpoint], at: str | None, message: str | None = None,
                     input_id: str | None = None) -> ConversationInput:
    """The input a fork of `workflow_id` at checkpoint `at` starts with, from the histories of
    its runs (oldest first) and their checkpoints: read from the server by `fork`, or recorded
    (a conversation of an earlier release, tests/test_time_travel_cases.py)."""
    point, base, message = _fork_point(points, workflow_id, at, message)
    by_run = {_run_of(h): h for h in histories}
    if point.run_id not in by_run:
        raise CheckpointError(f"checkpoint {point.id} is in none of the histories given")
    first = histories[0]
    # the state to start from: the conversation's at `base` (a turn's end), or as it started
    instance = await replay_history(client, _cut(first, first.events[0].event_id))
    state = instance.input.state  # a fork's inherited state, None for a new conversation
    if point.kind in INSIDE:  # the turn resumes where it stood (client/fork_state.py)
        instance, state = await state_inside_turn(client, by_run[point.run_id], point)
    elif base is not None and base.run_id in by_run:
        instance = await replay_history(client, _cut(by_run[base.run_id], base.event_id))
        state = instance.state
        if state.queue or state.pending or state.in_progress:
            raise CheckpointError(
                f"at {base.id} the next turn had already started in the same step; fork at a "
                "checkpoint of a turn that ended with no other turn waiting")
    origin = f"{workflow_id}@{point.id}"
    state = state.model_copy(deep=True) if state else None
    if state is not None and input_id is not None and message is not None:
        state.previous_input_id, state.last_input_id = state.last_input_id, input_id
    inp = instance.input.model_copy(update={
        "state": state, "task": message, "history": [],
        "team": instance.team or instance.input.team, "forked_from": origin})
    return inp


async def transcripts_at(client: Client, workflow_id: str, points: list[Checkpoint]) -> dict[str, list[Message]]:
    """The shared conversation as it stood at each of `points` (checkpoints of `workflow_id`,
    a fork's inherited ones too), by id: its history replayed cut there. A checkpoint whose
    step has not completed yet is left out."""
    histories = {_run_of(h): h for h in await run_histories(client, workflow_id)}
    found: dict[str, list[Message]] = {}
    for point in points:
        if point.run_id in histories:
            try:
                found[point.id] = (await replay_history(client, _cut(histories[point.run_id], point.event_id))
                                   ).transcript(False)
            except CheckpointError:
                continue
    inherited = [p for p in points if p.run_id not in histories]
    origin = await _origin_of(client, workflow_id) if inherited else ""
    return found | (await transcripts_at(client, origin, inherited) if origin else {})


def _fork_point(points: list[Checkpoint], workflow_id: str, at: str | None,
                message: str | None) -> tuple[Checkpoint, Checkpoint | None, str | None]:
    """The checkpoint to fork at, the turn end whose state the fork starts on (None: the
    conversation's start), and the fork's first message."""
    ends = [p for p in points if p.kind == "turn_end"]
    if at is None and not ends:
        raise CheckpointError(f"thread {workflow_id} has no finished turn to fork from; "
                              "name a checkpoint with --at")
    point = ends[-1] if at is None else find(points, workflow_id, at)
    if message is not None and not message.strip():
        raise CheckpointError("the fork's message is empty")
    if point.kind == "turn_end":
        return point, point, message
    if point.kind == "turn":  # taken again, on the state the turn before it left
        base = next((e for e in reversed(ends) if point.turn and e.turn == point.turn - 1), None)
        return point, base, point.text if message is None else message
    if message is not None:  # inside a turn: it goes on as it stood, with its own message
        start = next((p.id for p in reversed(points[: points.index(point)]) if p.kind == "turn"), None)
        raise CheckpointError(
            f"checkpoint {point.id} is inside a turn ({point.description}): a fork there continues "
            f"that turn, so it takes no --message; to edit the turn's message fork at its start"
            + (f" ({start})" if start else ""))
    return point, None, None


async def rewind(client: Client, workflow_id: str, to: str, reason: str = "") -> str:
    """Continue thread `workflow_id` from checkpoint `to` (a turn's end or start, of any of its
    runs, before a continue-as-new too): a Temporal reset to the workflow task after it. The
    abandoned branch stays as earlier runs of the same workflow id (`list_checkpoints(...,
    run_id=...)` reads it); turns and answers it took after the checkpoint are not re-applied
    (they belong to that branch). Returns the new run's id."""
    chain = await runs(client, workflow_id)
    points = await checkpoints_of(client, [history for _, history in chain])
    point = find(points, workflow_id, to)
    if point.kind not in ("turn", "turn_end"):
        raise CheckpointError(f"checkpoint {point.id} is inside a turn ({point.description}); "
                              "rewind to a turn's start or end")
    if point.kind == "turn":  # before the turn was taken: the end of the one before it
        before = [p for p in points if p.kind == "turn_end" and p.turn == (point.turn or 0) - 1]
        if not before:
            raise CheckpointError("the first turn has nothing before it to rewind to; fork it instead: "
                                  f"durable-teams fork {workflow_id} --at {point.id}")
        point = before[-1]
    # the run that holds the checkpoint, by the id the server knows it under (a run made by
    # an earlier rewind keeps the id of the run it was reset from in its history)
    held = [(actual, h) for actual, h in chain if _run_of(h) == point.run_id]
    if not held:
        raise CheckpointError(f"checkpoint {point.id} is not in a run of thread {workflow_id} "
                              "(it was inherited from the thread this one was forked from); "
                              f"fork from it instead: durable-teams fork {workflow_id} --at {point.id}")
    base, history = held[-1]
    task_done = _cut(history, point.event_id).events[-1].event_id
    # an earlier run (closed by continue-as-new) is reset as well: the server ends the current
    # run (terminated, readable) and starts the new one from the earlier run's history
    response = await client.workflow_service.reset_workflow_execution(ResetWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=base),
        reason=reason or f"durable-teams rewind to {point.id}", workflow_task_finish_event_id=task_done,
        request_id=uuid.uuid4().hex,
        reset_reapply_exclude_types=[ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
                                     ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE]))
    return str(response.run_id)


def _refuse_a_childs(histories: list[WorkflowHistory], points: list[Checkpoint], workflow_id: str,
                     checkpoint_id: str) -> None:
    """Raise a `CheckpointError` that says what to do if `checkpoint_id` is one of a nested
    team's (a child workflow of this thread): a fork of the thread starts the child anew from
    the handoff, and a fork of the child's own conversation is not the thread's."""
    tag = checkpoint_id.split(".")[0]
    for history in histories:
        for event in history.events:
            if event.event_type != EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
                continue
            child = event.child_workflow_execution_started_event_attributes.workflow_execution
            if run_tag(child.run_id) != tag:
                continue
            before = [p for p in points if p.run_id == _run_of(history) and p.event_id < event.event_id]
            handoff = f"at {before[-1].id} ({before[-1].description}), " if before else ""
            raise CheckpointError(
                f"{checkpoint_id!r} is a checkpoint of the nested team running as {child.workflow_id}, "
                f"not of thread {workflow_id}: fork the thread {handoff}before that team started "
                f"(its fork runs the team again), or fork the team's own conversation on its own: "
                f"durable-teams fork {child.workflow_id} --at {checkpoint_id}")


async def _inherited_memo(client: Client, workflow_id: str) -> dict[str, object]:
    """The original's memo a fork keeps (its team, its owner, whether a chat made it), without
    what identified the request that started the original."""
    memo = await (await client.get_workflow_handle(workflow_id).describe()).memo()
    return {k: v for k, v in memo.items() if k not in NOT_INHERITED and k != "forked_from"}


async def _origin_of(client: Client, workflow_id: str) -> str:
    """The thread a fork was forked from (the checkpoint's thread, for a fork of a fork)."""
    first = (await run_histories(client, workflow_id))[0]
    instance = await replay_history(client, _cut(first, first.events[0].event_id))
    return (instance.input.forked_from or "").rpartition("@")[0]


def _run_of(history: WorkflowHistory) -> str:
    started = history.events[0].workflow_execution_started_event_attributes
    return started.original_execution_run_id or history.run_id


def _cut(history: WorkflowHistory, event_id: int) -> WorkflowHistory:
    """`history` up to the first completed workflow task after `event_id`."""
    for n, event in enumerate(history.events):
        if event.event_id > event_id and event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return WorkflowHistory(history.workflow_id, history.events[: n + 1])
    raise CheckpointError(f"event {event_id} of {history.workflow_id} has no completed step after it yet")
