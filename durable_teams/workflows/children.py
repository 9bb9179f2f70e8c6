"""Agents that run as child workflows: nested teams (a supervisor as another supervisor's
agent) and agents marked `run_as_child`.

The child is the same `TeamWorkflow`, started for one turn with the sub-team as data and the
worker's view of the parent's conversation as its opening history, so it sees what an
in-process worker would: the user's request, earlier answers, and the handoff that engaged it.
Its answer comes back as the worker's answer and folds into the parent like any agent's.

Child ids derive from the parent's: `<parent id>/<agent>-<run>`. Agent run numbers grow across
continue-as-new (the transcript is carried), so an id is unique within a conversation and the
same on every replay. A child asks its own questions: `ask_human` marks the child's workflow
with `AwaitingHuman`, so it is listed and answered like any conversation's question.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from temporalio import workflow
from temporalio.exceptions import (
    ApplicationError,
    ChildWorkflowError,
    TerminatedError,
    TimeoutError,
    WorkflowAlreadyStartedError,
)

with workflow.unsafe.imports_passed_through():
    from . import roster, usage
    from .agent_loop import AgentLoop, AgentOutcome
    from .messages import Message, TeamSpec
    from .state import ConversationInput, ConversationResult, Flag
    from .transcript import AgentRun

HISTORY_BYTES = 512 * 1024
"""The most of the parent's conversation a child is handed: the newest messages that fit."""
MAX_INPUT_BYTES = 1536 * 1024
"""Over this the child is not started (Temporal refuses payloads over 2 MB, and a workflow
task failing on one is retried forever); the supervisor is told instead."""


def child_id(parent_id: str, agent: str, run_id: int) -> str:
    return f"{parent_id}/{agent}-{run_id}"


def child_team(team: TeamSpec, agent: str) -> TeamSpec:
    """What the child workflow runs: the nested team, or, for an agent marked `run_as_child`,
    a one-agent team (a swarm of one) with the parent's limits and only the tools it uses."""
    spec = team.agents[agent]
    if spec.team is not None:
        return spec.team
    alone = replace(spec, run_as_child=False, handoffs=[], handoff_tool_names={}, handoff_descriptions={})
    tools = {t: team.tools[t] for t in spec.tools if t in team.tools}
    kept = ("tools", agent, *tools)  # the team's breakpoints on what the child runs
    return replace(team, name=f"{team.name}/{agent}", supervisor=None, agents={agent: alone},
                   tools=tools, start_agent=agent,
                   interrupt_before=[n for n in team.interrupt_before if n in kept],
                   interrupt_after=[n for n in team.interrupt_after if n in kept])


def bounded_history(messages: list[Message], max_bytes: int = HISTORY_BYTES) -> list[Message]:
    """The newest messages whose JSON fits in `max_bytes`, never opening on a tool message
    whose call was cut off. The last message is always kept: it is the handoff (or the
    request) the child must act on."""
    kept: list[Message] = []
    size = 0
    for message in reversed(messages):
        size += len(message.model_dump_json())
        if kept and size > max_bytes:
            break
        kept.append(message)
    kept.reverse()
    while len(kept) > 1 and kept[0].role == "tool":
        kept.pop(0)
    return kept


def failure_text(err: BaseException) -> str:
    """A child's failure in words a supervisor (and a person reading the transcript) can use."""
    cause = err.cause if isinstance(err, ChildWorkflowError) and err.cause else err
    if isinstance(cause, TerminatedError):
        return "its workflow was terminated"
    if isinstance(cause, TimeoutError):
        return "its workflow timed out"
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause) or type(cause).__name__


async def run_child(loop: AgentLoop, run: AgentRun, share: int = 1) -> AgentOutcome:
    """Run agent run `run` as a child workflow and write its answer into the run's scope.

    Never raises for the child's sake: a failed, terminated or timed-out child becomes an error
    message from the agent, which the supervisor reads and can act on. The child spends what
    is left of the turn's token budgets (split among `share` children started at once); once
    they are spent the turn stops here, as it would before an agent's next model call."""
    team, transcript = loop.team, loop.state.transcript
    info = workflow.info()
    cid = child_id(info.workflow_id, run.agent, run.id)
    turn = usage.current_turn(loop.state.queue, loop.state.turns_started)
    sub = child_team(team, run.agent)
    over = usage.over_budget(loop.state.usage, turn, team.budgets)
    if over is not None:  # the handoff's own call spent it: no child to start
        return loop.stop(run.agent, run.id, over)
    sub = replace(sub, budgets=usage.child_budgets(
        sub.budgets, loop.state.usage, turn, team.budgets, share))
    inp = ConversationInput(
        team=sub,
        history=bounded_history(transcript.view(run.id, handoffs=roster.handoff_view(team))),
        single_turn=True,
        context=dict(loop.state.context),
        set_search_attributes=loop.desk.use_search_attribute,
    )
    kind = "nested team" if team.agents[run.agent].team is not None else "agent"
    size = len(inp.model_dump_json())
    if size > MAX_INPUT_BYTES:
        answer = ChildAnswer(f"{run.agent} could not start: its input is {size:,} bytes, over the "
                             f"{MAX_INPUT_BYTES:,}-byte limit for a child workflow.")
    else:
        loop.children[run.id] = cid
        try:
            result: ConversationResult = await workflow.execute_child_workflow(
                "TeamWorkflow", inp, id=cid, task_queue=info.task_queue,
                task_timeout=info.task_timeout,  # the parent's (client/start.py TASK_TIMEOUT)
                result_type=ConversationResult, static_summary=f"{kind}: {run.agent}",
                static_details=f"Run {run.id} of {run.agent} for {info.workflow_id}",
            )
            answer = _taken_in(loop, turn, result)
        except (ChildWorkflowError, WorkflowAlreadyStartedError) as err:
            answer = ChildAnswer(f"{run.agent} could not finish: {failure_text(err)}")
        finally:
            del loop.children[run.id]
    if answer.stopped is not None:
        outcome = _stopped_child(loop, run, answer.stopped, turn)
        if outcome is not None:
            return outcome
    transcript.append(Message(role="assistant", content=answer.text, name=run.agent, agent_run=run.id,
                              kind="error" if answer.failed else "message"))
    return AgentOutcome("answer", run.agent, answer.text, structured=answer.structured, flag=answer.flag)


@dataclass
class ChildAnswer:
    """What a child workflow gave its agent run: its answer, or why there is none (failed)."""

    text: str
    failed: bool = True
    structured: dict | None = None
    flag: Flag | None = None
    stopped: ConversationResult | None = None
    """The child's result when a budget stopped it."""


def _taken_in(loop: AgentLoop, turn: int, result: ConversationResult) -> ChildAnswer:
    """A child's result, its model calls, tokens and context taken into the parent's state."""
    loop.state.total_model_calls += result.model_calls
    if result.usage is not None:  # a delegate's tokens count in the parent's
        usage.add_child(loop.state.usage, turn, result.usage)
    loop.state.context.update(result.context)  # what the child's tools learned
    return ChildAnswer(result.answer, failed=result.status not in ("completed", "truncated", "filtered"),
                       structured=result.structured,
                       flag=result.status if result.status in ("truncated", "filtered") else None,
                       stopped=result if result.status == "budget_exceeded" else None)


def _stopped_child(loop: AgentLoop, run: AgentRun, result: ConversationResult, turn: int) -> AgentOutcome | None:
    """A child a budget stopped: what it had answered joins the run's scope (the parent's turn
    quotes it if it stops too), and if the parent's budget is spent as well its turn stops."""
    if result.before_stop is not None:
        loop.state.transcript.append(result.before_stop.model_copy(
            update={"agent_run": run.id, "usage": None, "kind": "message"}))
    over = usage.over_budget(loop.state.usage, turn, loop.team.budgets)
    return None if over is None else loop.stop(run.agent, run.id, over)
