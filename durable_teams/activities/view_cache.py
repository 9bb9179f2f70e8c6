"""How the `call_model` activity reads its agent's view of the transcript.

The view the workflow built when it scheduled the call, when the workflow instance is in this
worker process (workflows/offered_views.py: no query, no second build); else by query, from this
worker's copy of the conversation's log plus the messages it lacks (`model_view_delta`), so a
query costs O(new messages) and stays under the server's 2 MB cap on a query result however
long the conversation. Queries add nothing to history. The copy is only an optimisation: a
miss (another worker served the last call, a restart, an eviction, a new run after
continue-as-new) reads from the start.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from temporalio import activity

from durable_teams.workflows import offered_views
from durable_teams.workflows.agent_views import ViewBuilder
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest, ModelView, ToolSpec
from durable_teams.workflows.transcript import LogDelta, Transcript, merge_delta

ViewReader = Callable[[ModelRequest], Awaitable[ModelView]]
"""How `call_model` reads a view (`ViewCache.read` by default; tests pass their own)."""

DeltaReader = Callable[[ModelRequest, int, int, bool], Awaitable[LogDelta]]
"""`(req, log_start, shared_start, with_tools) -> LogDelta`: the workflow's `model_view_delta`."""


async def query_delta(req: ModelRequest, log_start: int, shared_start: int, with_tools: bool) -> LogDelta:
    """What this worker lacks of the conversation's log (a query: adds nothing to history)."""
    handle = activity.client().get_workflow_handle(req.workflow_id, run_id=req.run_id)
    return await handle.query(
        TeamWorkflow.model_view_delta,
        args=[req.agent, req.agent_run, req.transcript_length, log_start, shared_start, with_tools],
    )


def _approx_bytes(message: Message) -> int:
    """A rough size of a cached message in memory (strings plus object overhead)."""
    size = 600 + len(message.content or "")
    for c in message.tool_calls:
        size += 300 + len(c.arguments) + len(c.name) + len(c.id)
    return size


@dataclass(eq=False)
class _Entry:
    log: list[Message] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    tools: dict[str, list[ToolSpec]] = field(default_factory=dict)
    size: int = 0
    views: ViewBuilder = field(default_factory=ViewBuilder)
    """Each agent run's view, extended call after call (workflows/agent_views.py)."""


class ViewCache:
    """Per-worker cache of the conversation logs `call_model` has read, keyed by (workflow id,
    run id), least recently used first out.

    Exact, not approximate: the workflow's log and shared list only grow at the end within a
    run, so a prefix read once stays true; the view is rebuilt with the workflow's own pure code
    (`workflows.transcript`) as of `transcript_length`, so a retry sees the same view. Several
    calls of one conversation may read at once (parallel workers): each merges only what extends
    the prefix.
    """

    def __init__(
        self,
        max_bytes: int = 64 * 1024 * 1024,
        max_conversations: int = 2000,
        delta_reader: DeltaReader = query_delta,
        live: bool = True,
    ) -> None:
        """`live=False` always queries, as on a worker that does not hold the workflow (the
        benchmark measures both)."""
        self.max_bytes = max_bytes
        self.max_conversations = max_conversations
        self.delta_reader = delta_reader
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.use_live_view = live
        self.live = 0
        """Views read from a workflow instance in this process (workflows/offered_views.py)."""

    def __len__(self) -> int:
        return len(self._entries)

    async def read(self, req: ModelRequest) -> ModelView:
        live = offered_views.read(req) if self.use_live_view else None  # cached here: no query
        if live is not None:
            self.live += 1
            return live
        key = (req.workflow_id, req.run_id)
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            entry = _Entry()
        else:
            self.hits += 1
        log_start, shared_start = len(entry.log), len(entry.shared)
        delta = await self.delta_reader(req, log_start, shared_start, req.agent not in entry.tools)
        if delta.log_start != log_start or delta.shared_start != shared_start:
            self._drop(key)  # the workflow no longer has what we hold: start again from 0
            entry = _Entry(tools=entry.tools)  # same run, same team: tool schemas still hold
        had = len(entry.log)
        shared_end, handoffs = merge_delta(entry.log, entry.shared, delta, req.transcript_length)
        messages = entry.views.view(Transcript.of(entry.log, entry.shared, delta.runs), req.agent_run,
                                    req.transcript_length, shared_end, handoffs)
        if delta.tools is not None:
            entry.tools[req.agent] = delta.tools
        tools = entry.tools.get(req.agent)
        if tools is None:  # not asked for, yet gone (a concurrent reset): ask for them alone
            tools = (await self.delta_reader(req, len(entry.log), len(entry.shared), True)).tools or []
        added = sum(_approx_bytes(m) for m in entry.log[had:])
        entry.size += added
        current = self._entries.get(key)
        if current is entry:
            self.bytes += added
            self._entries.move_to_end(key)
        elif current is None:
            self._entries[key] = entry
            self.bytes += entry.size
        self._evict()
        return ModelView(messages=messages, tools=tools)

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def _evict(self) -> None:
        while self._entries and (
            self.bytes > self.max_bytes or len(self._entries) > self.max_conversations
        ):
            _, entry = self._entries.popitem(last=False)
            self.bytes -= entry.size
