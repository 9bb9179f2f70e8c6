"""What an agent run looks like to tracing, from inside the workflow (no OpenTelemetry here).

Workflow code marks each agent run with `agent_run_span(...)`. Nothing happens unless the
worker traces (durable_teams/tracing/workflow_spans.py sets `SINK`): then the run gets a span id
derived from where it stands in the history (so a replay finds the same id), activities and
child workflows it schedules are parented under that id, and when the run ends, outside
replay, its record goes to the sink with start and end times from workflow time. No command,
no I/O, no clock: tracing on or off, the history is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow


@dataclass(frozen=True)
class HandoffMade:
    """A transfer this run made: to whom, by which tool call."""

    target: str
    tool: str
    call_id: str


@dataclass
class AgentRunRecord:
    """One finished agent run, as the tracing sink receives it."""

    agent: str
    span_id: int
    start_ns: int
    end_ns: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    handoffs: list[HandoffMade] = field(default_factory=list)
    error: str | None = None


Sink = Callable[[AgentRunRecord], None]

SINK: ContextVar[Sink | None] = ContextVar("durable_teams_agent_span_sink", default=None)
"""Where finished runs go: set by the tracing workflow interceptor, unset when not tracing."""

CURRENT: ContextVar[int | None] = ContextVar("durable_teams_agent_span", default=None)
"""The span id of the agent run this asyncio task works for (concurrent runs each have one)."""


def span_id(*key: object) -> int:
    """A non-zero 64-bit span id derived from `key` (the same on every replay)."""
    digest = hashlib.sha256("/".join(map(str, key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


@contextmanager
def agent_run_span(agent: str, agent_run: int, position: int, *, model: str | None, team: str,
                   benign: tuple[type[BaseException], ...] = ()) -> Iterator[AgentRunRecord | None]:
    """Mark one run of `agent` (in transcript scope `agent_run`, begun when the log had
    `position` messages). Yields the record to add handoffs to, or None when not tracing.
    An exception ends the run with its type as `error`, unless it is `benign` (a run cut off
    to continue in the next workflow run)."""
    sink = SINK.get()
    if sink is None:
        yield None
        return
    info = workflow.info()
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": info.workflow_id, "durable_teams.team": team,
        "durable_teams.agent_run": agent_run}
    if model:
        attributes["gen_ai.request.model"] = model
    record = AgentRunRecord(agent, span_id(info.run_id, agent_run, position, agent),
                            workflow.time_ns(), attributes=attributes)
    token = CURRENT.set(record.span_id)
    try:
        yield record
    except BaseException as err:
        if not isinstance(err, benign):
            record.error = type(err).__name__
        raise
    finally:
        CURRENT.reset(token)
        # Replaying: the run was reported when it ran. Evicting from the cache counts as
        # replaying too, so a run cut off by an eviction is never reported as ended.
        if not workflow.unsafe.is_replaying():
            record.end_ns = workflow.time_ns()
            sink(record)
