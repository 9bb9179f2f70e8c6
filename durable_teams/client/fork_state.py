"""The state a fork inside a turn starts on: the original's, as its history stood right after
the checkpoint, with the turn marked to resume where it stood.

Why no new workflow code: a conversation already resumes a turn from carried state. When a run
continues as new in the middle of a turn (an agent waiting for a person), its state carries the
turn in `queue`, the tool answers of the batch being answered in `answered_calls`, and where it
stood in `in_progress` (`TurnProgress`); the next run's turn loop picks that up
(workflows/turns.py, `AgentLoop.resume_calls`): a model reply whose calls are not all answered
has the rest run (the answered ones are reused, never run again), else the agent's model is
called on the transcript so far. A fork inside a turn is that same resume, on the state replayed
from the original's history cut at the checkpoint. What the cut state holds that a person would
not expect is undone here: a model call the next step had already scheduled (counted, not made
in the prefix) is uncounted, and a question answered whose tool had not run yet is put back as
open with its answer, so the fork goes on as the original did after the answer, without asking.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory

from durable_teams.client.checkpoints import Checkpoint, CheckpointError
from durable_teams.client.replay_state import replay_history
from durable_teams.workflows import roster
from durable_teams.workflows.builtins import BUILTINS
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, TeamSpec
from durable_teams.workflows.state import ConversationState, Question, TurnProgress

_BY_COMMAND = (EventType.EVENT_TYPE_MARKER_RECORDED,
               EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
"""Events a workflow task's own commands write after it completed (a local activity's result,
an accepted update): that task is the one that took them."""
_COMMAND_EVENTS = {*_BY_COMMAND, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventType.EVENT_TYPE_TIMER_STARTED,
                   EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
                   EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
                   EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
                   EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
                   EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, EventType.EVENT_TYPE_TIMER_CANCELED}
"""What a workflow task's commands write right after it completed (the next task's trigger, an
activity's start or end, a signal, comes after them)."""


async def state_inside_turn(client: Client, history: WorkflowHistory,
                            point: Checkpoint) -> tuple[TeamWorkflow, ConversationState]:
    """The replayed instance right after `point` (a model reply, tool result or answer of
    `history`'s run) and the state a fork there starts on: the running turn marked to resume.
    Raises `CheckpointError` where a turn cannot be resumed (several agents at work at once)."""
    cut = cut_after(history, point.event_id)
    asked: dict[str, Question] = {}

    def watch(instance: TeamWorkflow) -> None:  # every question the replay puts up, to restore one
        instance.desk.on_ask.append(lambda question: asked.__setitem__(question.question_id, question))

    instance = await replay_history(client, cut, on_start=watch)
    state = instance.state.model_copy(deep=True)
    state.pending = dict(state.pending)
    if not state.queue:  # the step ended the turn: the fork starts at that turn's end
        return instance, state
    team = instance.team
    assert team is not None
    number, turn = state.queue[0]
    agent, agent_run = _current_run(team, state)
    budget = getattr(instance, "turn_budget", None)
    spent = [budget.model_calls, budget.handoffs, budget.tool_calls] if budget else [0, 0, 0]
    spent[0] -= await _uncount_model_calls(client, state, cut.events)
    spent[1:] = _before_batch(team, state, agent, agent_run, spent[1], spent[2])
    _reopen_answered(state, asked)
    target, _, _ = roster.parse_mention(team, turn.text) if turn.text else (None, "", None)
    state.in_progress = TurnProgress(
        turn=number, agent=agent, agent_run=agent_run, direct=agent_run != 0 and agent == target,
        model_calls=max(spent[0], 0), handoffs=max(spent[1], 0), tool_calls=max(spent[2], 0))
    return instance, state


def cut_after(history: WorkflowHistory, event_id: int) -> WorkflowHistory:
    """`history` up to the end of the workflow task that took event `event_id`, with the events
    its commands wrote (a local activity's result, an accepted answer), before anything after."""
    events = history.events
    index = next((n for n, e in enumerate(events) if e.event_id == event_id), None)
    if index is None:
        raise CheckpointError(f"event {event_id} is not in the history of {history.workflow_id}")
    done = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    if events[index].event_type in _BY_COMMAND:
        task = max(n for n in range(index) if events[n].event_type == done)
    else:
        task = next((n for n in range(index, len(events)) if events[n].event_type == done), -1)
        if task < 0:
            raise CheckpointError(f"checkpoint event {event_id} has no completed step after it yet")
    end = task + 1
    while end < len(events) and events[end].event_type in _COMMAND_EVENTS:
        end += 1
    return WorkflowHistory(history.workflow_id, events[:end])


def _current_run(team: TeamSpec, state: ConversationState) -> tuple[str, int]:
    """The agent and agent run the running turn stands in: the one open worker run of this
    turn, else the supervisor's (or the active swarm agent's) shared run."""
    log = state.transcript.log
    start = max((i for i, m in enumerate(log) if m.role == "user" and m.kind == "message"), default=0)
    calls = {c.id for m in log[start:] for c in m.tool_calls or []}
    own = {m.agent_run for m in log[start:]}
    open_runs = [r for r in state.transcript.runs.values()
                 if not r.done and (r.handoff_call_id in calls or r.id in own)]
    if len(open_runs) > 1:
        names = ", ".join(r.agent for r in open_runs)
        raise CheckpointError(f"at this checkpoint {len(open_runs)} agents work at once ({names}); "
                              "fork at the step before their handoff or at a turn's start or end")
    if open_runs:
        return open_runs[0].agent, open_runs[0].id
    if team.supervisor is not None:
        return team.supervisor.name, 0
    return state.active_agent or team.start_agent or next(iter(team.agents)), 0


async def _uncount_model_calls(client: Client, state: ConversationState, events: Sequence[HistoryEvent]) -> int:
    """Model calls scheduled in the cut with no reply in it: counted when scheduled, made (and
    counted again) by the fork. Returns how many were uncounted."""
    scheduled = {e.event_id: e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                 and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"}
    for e in events:
        attributes = (e.activity_task_completed_event_attributes, e.activity_task_failed_event_attributes,
                      e.activity_task_timed_out_event_attributes, e.activity_task_canceled_event_attributes)
        if e.event_type in _ACTIVITY_ENDS:
            scheduled.pop(attributes[_ACTIVITY_ENDS.index(e.event_type)].scheduled_event_id, None)
    for event in scheduled.values():
        state.total_model_calls -= 1
        agent = await _agent_of(client, event)
        if agent in state.model_calls_by_agent:
            state.model_calls_by_agent[agent] -= 1
    return len(scheduled)


async def _agent_of(client: Client, scheduled: HistoryEvent) -> str | None:
    """The agent a scheduled `call_model` was for: its input's `ModelRequest.agent` (None when
    the input cannot be read: only the per-agent count is lost)."""
    payloads = scheduled.activity_task_scheduled_event_attributes.input.payloads
    try:
        request, = await client.data_converter.decode(payloads[:1], [ModelRequest])
    except Exception:  # a payload this client cannot decode (another key, another release)
        return None
    return request.agent if isinstance(request, ModelRequest) else None


_ACTIVITY_ENDS = [EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
                  EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED]


def _before_batch(team: TeamSpec, state: ConversationState, agent: str, agent_run: int,
                  handoffs: int, tool_calls: int) -> tuple[int, int]:
    """The turn's handoff and tool call counts before the batch being answered, as the resume
    counts that batch again (its answered calls excepted)."""
    last = _last_message(state, agent_run)
    if last is None or last.role != "assistant" or not last.tool_calls:
        return handoffs, tool_calls
    targets = roster.handoff_targets(team, agent)
    owned = {t.name for t in roster.agent_tools(team, agent)}
    for call in last.tool_calls:
        if call.name in targets:
            handoffs -= 1
        elif call.id not in state.answered_calls and call.name in owned and call.name not in BUILTINS:
            tool_calls -= 1
    return handoffs, tool_calls


def _last_message(state: ConversationState, agent_run: int) -> Message | None:
    return next((m for m in reversed(state.transcript.log)
                 if m.agent_run == agent_run and m.kind != "notice"), None)


def _reopen_answered(state: ConversationState, asked: dict[str, Question]) -> None:
    """A question answered in the prefix whose call had no tool message yet (an approval whose
    tool was running): open again with its answer, so the fork takes the answer at once."""
    told = {m.tool_call_id for m in state.transcript.log if m.role == "tool"} | set(state.answered_calls)
    for qid, question in asked.items():
        if qid in state.answers and qid not in state.pending and question.tool_call_id not in told:
            state.pending[qid] = question
