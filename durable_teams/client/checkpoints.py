"""A conversation's checkpoints, read from its history (nothing is kept twice).

Why from history: Temporal already records every step a conversation took: each turn taken,
each model reply and tool result (activity completions), each answer. A checkpoint's id is the
history event that made it, prefixed with its run (`<run tag>.<event id>`; a turn's start or
end adds `t<n>` or `e<n>`: several turns can be taken in one workflow task), so it is stable,
and a checkpoint of another thread is told apart. Turn starts and ends are read by replaying the
history in this process (as `replay_state` does: no worker, no model, no tool run), watching
the workflow's own turn queue and replies as each workflow task replays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory

from durable_teams.client.replay_state import replay_history, took_a_step
from durable_teams.workflows.state import ConversationInput, TurnReply, UserTurn

Kind = Literal["turn", "model", "tool", "answer", "turn_end"]
RUN_TAG = 8
"""Characters of the run id a checkpoint id starts with."""


class CheckpointError(ValueError):
    """A checkpoint that is not one of this thread's, or one a fork cannot start from."""


@dataclass(frozen=True)
class Checkpoint:
    """One point a conversation passed: `kind` "turn" (a user turn taken), "model" (a model
    reply), "tool" (a tool result), "answer" (a person answered a question), "turn_end"."""

    id: str
    kind: Kind
    run_id: str
    event_id: int
    """The history event that made it (for turns: the workflow task that took or ended it)."""
    turn: int | None
    agent: str | None
    description: str
    text: str | None = None
    """A turn's user message, or the words of an answer."""
    question: str | None = None
    """An answer's question id (when this client can read the answer)."""


@dataclass
class _Turns:
    """What the replay saw: turns taken (number, task event, turn) and ended (number, task
    event, reply), each with the active agent."""

    taken: list[tuple[int, int, UserTurn, str | None]]
    ended: list[tuple[int, int, TurnReply, str | None]]


async def run_histories(client: Client, workflow_id: str, run_id: str | None = None) -> list[WorkflowHistory]:
    """The histories of every run of `workflow_id`, oldest first (following continue-as-new),
    up to its current run or (an abandoned branch, after a rewind) up to run `run_id`."""
    return [history for _, history in await runs(client, workflow_id, run_id)]


async def runs(client: Client, workflow_id: str, run_id: str | None = None) -> list[tuple[str, WorkflowHistory]]:
    """`run_histories`, each with the id the run has on the server: after a rewind (a reset)
    it differs from the id its history names (`original_execution_run_id`, kept by a reset)."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    current = run_id or (await handle.describe()).run_id
    found = [(current, await client.get_workflow_handle(workflow_id, run_id=current).fetch_history())]
    while True:
        started = found[0][1].events[0].workflow_execution_started_event_attributes
        previous = started.continued_execution_run_id
        if not previous:
            return found
        handle = client.get_workflow_handle(workflow_id, run_id=previous)
        found.insert(0, (previous, await handle.fetch_history()))


async def list_checkpoints(client: Client, workflow_id: str, run_id: str | None = None) -> list[Checkpoint]:
    """Every checkpoint of the thread `workflow_id`, across its runs, in order; a fork's list
    starts with the prefix it inherited (its origin's checkpoints up to the one it forked at).
    `run_id`: the branch that ends with that run (one a rewind abandoned). Needs no worker."""
    return await checkpoints_of(client, await run_histories(client, workflow_id, run_id))


async def checkpoints_of(client: Client, histories: list[WorkflowHistory]) -> list[Checkpoint]:
    """`list_checkpoints` of a thread whose run histories (oldest first) the caller has read
    already (a fork or a rewind reads them too: fetched once)."""
    found: list[Checkpoint] = []
    origin: str | None = None
    for n, history in enumerate(histories):
        points, forked_from = await run_checkpoints(client, history)
        found.extend(points)
        origin = forked_from if n == 0 else origin
    if origin is None:
        return found
    origin_id, _, at = origin.rpartition("@")
    try:
        inherited = await list_checkpoints(client, origin_id)
    except Exception:  # the origin was deleted, say: the fork's own steps are still its own
        return found
    upto = next((i for i, p in enumerate(inherited) if p.id == at), -1)
    if upto >= 0 and inherited[upto].kind == "turn":
        upto -= 1  # forked at a turn's start: that turn was taken again in the fork
    return [*inherited[: upto + 1], *found]


async def run_checkpoints(client: Client, history: WorkflowHistory) -> tuple[list[Checkpoint], str | None]:
    """The checkpoints of one run's history, and where the run was forked from (if it was)."""
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    run_id = run_id or history.run_id
    turns, forked_from = await _replayed_turns(client, history)
    points = [*_turn_points(run_id, turns), *await _step_points(client, run_id, history.events)]
    return sorted(points, key=lambda p: (p.event_id, p.kind != "turn_end")), forked_from


def _cid(run_id: str, event_id: int) -> str:
    return f"{run_tag(run_id)}.{event_id}"


def run_tag(run_id: str) -> str:
    """The part of a run id a checkpoint id starts with: its random tail (run ids are UUIDv7,
    whose head is a timestamp runs started together share)."""
    return run_id.replace("-", "")[-RUN_TAG:]


def _turn_points(run_id: str, turns: _Turns) -> list[Checkpoint]:
    # several turns may be taken (or end) in one workflow task: the turn number tells them apart
    points = [Checkpoint(f"{_cid(run_id, event)}t{n}", "turn", run_id, event, n, agent,
                         f"turn {n} taken: {_short(turn.text)}", text=turn.text)
              for n, event, turn, agent in turns.taken]
    points += [Checkpoint(f"{_cid(run_id, event)}e{n}", "turn_end", run_id, event, n, reply.agent,
                          f"turn {n} ended ({reply.status}): {_short(reply.text)}")
               for n, event, reply, _ in turns.ended]
    return points


async def _replayed_turns(client: Client, history: WorkflowHistory) -> tuple[_Turns, str | None]:
    turns = _Turns([], [])
    if not took_a_step(history):  # a run that just began: no turn taken yet, its input says the rest
        started = history.events[0].workflow_execution_started_event_attributes
        inp, = await client.data_converter.decode(started.input.payloads, [ConversationInput])
        return turns, inp.forked_from

    def watch(instance: Any) -> None:
        state = instance.state

        class Queue(list):  # type: ignore[type-arg]
            def append(self, item: Any) -> None:
                info = workflow.info()
                turns.taken.append((item[0], info.get_current_history_length(), item[1], state.active_agent))
                super().append(item)

        class Replies(dict):  # type: ignore[type-arg]
            def __setitem__(self, key: Any, value: Any) -> None:
                if key not in self:
                    info = workflow.info()
                    turns.ended.append((key, info.get_current_history_length(), value, state.active_agent))
                super().__setitem__(key, value)

        queue = Queue()
        # listed in the run before, or (a fork inside a turn) in the original
        carried = workflow.info().continued_run_id is not None or state.in_progress is not None
        for item in state.queue:  # queued as the run began: a fork's first turn
            list.append(queue, item) if carried else queue.append(item)
        object.__setattr__(state, "queue", queue)
        object.__setattr__(state, "replies", Replies(state.replies))

    instance = await replay_history(client, history, on_start=watch)
    return turns, instance.input.forked_from


async def _step_points(client: Client, run_id: str, events: Sequence[HistoryEvent]) -> list[Checkpoint]:
    scheduled: dict[int, tuple[str, str]] = {}
    points: list[Checkpoint] = []
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            summary = await _summary(client, event)
            scheduled[event.event_id] = (name, summary or name)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            name, summary = scheduled.get(
                event.activity_task_completed_event_attributes.scheduled_event_id, ("", ""))
            point = _activity_point(run_id, event.event_id, name, summary)
            if point:
                points.append(point)
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            name = _local_activity_type(event)
            point = _activity_point(run_id, event.event_id, name, name) if name else None
            if point:
                points.append(point)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if request.name == "answer":
                points.append(await _answer_point(client, run_id, event.event_id, request.args.payloads))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signal = event.workflow_execution_signaled_event_attributes
            if signal.signal_name == "human_reply":
                points.append(await _answer_point(client, run_id, event.event_id, signal.input.payloads))
    return points


async def _answer_point(client: Client, run_id: str, event_id: int, payloads: Sequence[Payload]) -> Checkpoint:
    """An answer's checkpoint, with the words the person answered (a chat client resends them:
    gateway/doors/openai_chat/edits.py lines them up), when this client can read them."""
    try:
        [reply, *_] = await client.data_converter.decode(payloads)
        text = reply.get("text") if isinstance(reply, dict) else None
        question = reply.get("question_id") if isinstance(reply, dict) else None
    except Exception:  # noqa: BLE001 - unreadable (another key, a malformed answer): no words
        text = question = None
    return Checkpoint(_cid(run_id, event_id), "answer", run_id, event_id, None, None, "a question answered",
                      text=text if isinstance(text, str) else None,
                      question=question if isinstance(question, str) else None)


def _activity_point(run_id: str, event_id: int, name: str, summary: str) -> Checkpoint | None:
    if name == "call_model":
        agent = summary.removeprefix("model: ").split(" (")[0] if summary.startswith("model: ") else None
        return Checkpoint(_cid(run_id, event_id), "model", run_id, event_id, None, agent,
                          f"model reply ({summary})")
    if name in ("run_tool", "call_mcp_tool") or summary.startswith("tool:"):
        return Checkpoint(_cid(run_id, event_id), "tool", run_id, event_id, None, None,
                          f"tool result ({summary.removeprefix('tool: ')})")
    return None


async def _summary(client: Client, event: HistoryEvent) -> str:
    if not event.HasField("user_metadata") or not event.user_metadata.HasField("summary"):
        return ""
    try:
        summary, = await client.data_converter.decode([event.user_metadata.summary], [str])
        return str(summary)
    except Exception:  # an unreadable summary only loses the description
        return ""


def _local_activity_type(event: HistoryEvent) -> str:
    details = event.marker_recorded_event_attributes.details
    if event.marker_recorded_event_attributes.marker_name != "core_local_activity" or "data" not in details:
        return ""
    try:
        return str(json.loads(details["data"].payloads[0].data).get("activity_type", ""))
    except (ValueError, IndexError, AttributeError):
        return ""


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
