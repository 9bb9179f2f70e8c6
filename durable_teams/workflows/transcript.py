"""The conversation's transcript and the per-agent views of it. Pure: no Temporal imports.

Every message ever produced is appended once to `log`. Agents see *views* built from it:

- `shared` lists the log indices that form the conversation everyone shares (the supervisor's
  view). With `output_mode="full_history"` a worker's whole run is added to it when the worker
  finishes; with `"last_message"` only its final answer is.
- A worker's run k sees the shared conversation as it was when it was handed the task, plus
  its own private messages (`agent_run` k). By default handoff artifacts of *other* runs are
  stripped, so a worker is never shown a `transfer_*` call to a tool it does not own (the
  langgraph-supervisor trap where workers invent `transfer_back_to_supervisor`); what it is
  shown of them is a `handoff.HandoffView`.

Views read the log only up to a given length, so a model call retried later sees exactly the
view it was scheduled with, even if parallel agents appended messages in between.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    model_serializer,
    model_validator,
)

from .handoff import HandoffView, strip_foreign_handoffs, strip_siblings
from .messages import Message, OutputMode, ToolSpec
from .wire_base import Reply, Wire

T = TypeVar("T")

APPEND_WATCHERS: list[Callable[[int, Message], None]] = []
"""Told of every message appended to any transcript (index, message): the log outbox a worker
announces steps from (workflows/log_outbox.py). They only record, never change what a workflow does."""


class ReadOnlyList(Sequence[T], Generic[T]):
    """A list seen without its mutators: indexing, slicing (a copy), length, iteration."""

    __slots__ = ("_items",)

    def __init__(self, items: list[T]):
        self._items = items

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return self._items == (list(other) if isinstance(other, ReadOnlyList) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._items)


class AgentRun(Wire):
    """One engagement of a worker agent: its private scope and where its view starts."""

    id: int
    agent: str
    shared_start: int
    """len(shared) when the run began: the worker sees shared[:shared_start]."""
    handoff_call_id: str | None = None
    done: bool = False


class _TranscriptWire(Wire):
    """How a `Transcript` travels (its fields, under their historical names)."""

    log: list[Message] = Field(default_factory=list)
    shared: list[int] = Field(default_factory=list)
    runs: dict[int, AgentRun] = Field(default_factory=dict)


class Transcript(Wire):
    """The log, the shared index and the agent runs, behind one rule.

    **Append-only within a workflow run.** `log` and `shared` only ever grow at their ends
    (`append`, `finish_run`), and runs are only added; nothing outside this class can change
    them, as they are private and read through read-only views. Two readers depend on it: the
    views built incrementally from prefixes of the lists (workflows/agent_views.py), and the
    model activity's query path, which keeps a per-worker copy and asks only for what it lacks
    (`LogDelta`). Both read as of the lengths a call was scheduled with, so a prefix they read
    can never change.
    A new run (after continue-as-new) has a new run id, so nothing carries over to it.

    On the wire (workflow input after continue-as-new) it is `{"log", "shared", "runs"}`.
    """

    _log: list[Message] = PrivateAttr(default_factory=list)
    _shared: list[int] = PrivateAttr(default_factory=list)
    _runs: dict[int, AgentRun] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, log: list[Message], shared: list[int], runs: dict[int, AgentRun]) -> Transcript:
        """A transcript holding these lists (taken, not copied): snapshots for reading views."""
        transcript = cls.model_construct()
        transcript._log, transcript._shared, transcript._runs = log, shared, runs
        return transcript

    @model_validator(mode="wrap")
    @classmethod
    def _from_wire(cls, data: Any, handler: ModelWrapValidatorHandler[Transcript]) -> Transcript:
        if isinstance(data, Transcript):
            return data
        wire = _TranscriptWire.model_validate(data)
        transcript = handler({})
        transcript._log, transcript._shared, transcript._runs = wire.log, wire.shared, wire.runs
        return transcript

    @model_serializer(mode="plain")
    def _to_wire(self) -> _TranscriptWire:
        return _TranscriptWire.model_construct(log=self._log, shared=self._shared, runs=self._runs)

    @property
    def log(self) -> ReadOnlyList[Message]:
        """Every message ever produced, in order (read-only)."""
        return ReadOnlyList(self._log)

    @property
    def shared(self) -> ReadOnlyList[int]:
        """Log indices of the conversation everyone shares (read-only)."""
        return ReadOnlyList(self._shared)

    @property
    def runs(self) -> Mapping[int, AgentRun]:
        """Agent runs by id (a copy: runs are only ever added, by `start_run`)."""
        return dict(self._runs)

    def run(self, run_id: int) -> AgentRun | None:
        """Agent run `run_id`, if it was started."""
        return self._runs.get(run_id)

    def append(self, message: Message) -> int:
        """Append to the log (and to the shared conversation if its agent_run is 0); returns the index."""
        self._log.append(message)
        index = len(self._log) - 1
        if message.agent_run == 0:
            self._shared.append(index)
        for watcher in APPEND_WATCHERS:
            watcher(index, message)
        return index

    def start_run(self, agent: str, handoff_call_id: str | None) -> AgentRun:
        run = AgentRun(
            id=len(self._runs) + 1,
            agent=agent,
            shared_start=len(self._shared),
            handoff_call_id=handoff_call_id,
        )
        self._runs[run.id] = run
        return run

    def run_messages(self, run_id: int, upto: int | None = None) -> list[int]:
        log = self._log  # a local: private attributes are slow to read, once per message
        end = len(log) if upto is None else upto
        return [i for i in range(end) if log[i].agent_run == run_id]

    def finish_run(self, run_id: int, output_mode: OutputMode, *, unshared: Collection[str] = ()) -> list[int]:
        """Fold a finished run into the shared conversation; returns the indices added.
        Messages of a kind in `unshared` stay private (a routing decision's attempts)."""
        run = self._runs[run_id]
        run.done = True
        own = [i for i in self.run_messages(run_id) if self._log[i].kind not in unshared]
        if output_mode == "last_message":
            own = last_answer(self._log, own)
        self._shared.extend(own)
        return own

    def shared_messages(self, upto: int | None = None) -> list[Message]:
        log = self._log
        end = len(log) if upto is None else upto
        return [log[i] for i in self._shared if i < end]

    def view(self, agent_run: int, upto: int | None = None, handoffs: HandoffView = "own",
             notices: bool = False) -> list[Message]:
        """The messages agent run `agent_run` sees (0: the shared conversation).

        `handoffs` is what a worker is shown of handoff calls and their tool messages (they
        always stay in the log, for audit): see `HandoffView`. The shared conversation shows
        them all unless it is "none". Notices (kind "notice": refused signals) are for people:
        only `notices=True` (the `transcript` query) shows them, never a model's view.
        """
        if agent_run == 0:
            shared = [m for m in self.shared_messages(upto) if notices or m.kind != "notice"]
            return strip_foreign_handoffs(shared, None) if handoffs == "none" else shared
        run = self._runs[agent_run]
        log = self._log
        end = len(log) if upto is None else upto
        # Routing records and notices are for people and audits: no worker is shown them.
        prefix = [log[i] for i in self._shared[: run.shared_start]
                  if i < end and log[i].kind not in ("routing", "notice")]
        own = [log[i] for i in self.run_messages(agent_run, end)]
        if handoffs == "all":
            return strip_siblings(prefix, run.handoff_call_id) + own
        keep = run.handoff_call_id if handoffs == "own" else None
        return strip_foreign_handoffs(prefix, keep_call_id=keep) + own

    def delta(
        self, log_start: int, shared_start: int, upto: int, handoffs: HandoffView = "own",
        tools: list[ToolSpec] | None = None,
    ) -> LogDelta:
        """`log_delta(self, ...)`: what a reader holding a prefix of the log lacks."""
        return log_delta(self, log_start, shared_start, upto, handoffs, tools)


def last_answer(log: list[Message], indices: list[int]) -> list[int]:
    """The worker's final answer: its last assistant message and anything after it (a
    return_direct tool result), as langgraph-supervisor's `last_message` mode keeps it."""
    for pos in range(len(indices) - 1, -1, -1):
        if log[indices[pos]].role == "assistant":
            return indices[pos:]
    return indices[-1:]


# ---- reading the log incrementally (the model activity's cache) ---------------------------------


class LogDelta(Reply):
    """What the `model_view_delta` query returns: the part of the log (and of `shared`) a reader
    holding a prefix has not seen yet, plus the small bookkeeping a view needs.

    A reader that already holds `log[:log_start]` and `shared[:shared_start]` rebuilds exactly
    the view `Transcript.view` gives (`merge_delta`, then workflows/agent_views.py). Correct because of the rule
    `Transcript` keeps: within one workflow run `log` and `shared` only grow at their ends; a
    new run (after continue-as-new) has a new run id, so a reader keyed by run id starts from 0.
    """

    log_start: int
    messages: list[Message]
    """log[log_start:upto]."""
    shared_start: int
    shared: list[int]
    """shared[shared_start:], as the workflow holds it now."""
    runs: dict[int, AgentRun]
    handoffs: HandoffView = "own"
    """What the team's views show of handoffs (`roster.handoff_view`)."""
    tools: list[ToolSpec] | None = None
    """The agent's tool schemas, when asked for (they do not change within a run)."""


def log_delta(
    transcript: Transcript, log_start: int, shared_start: int, upto: int,
    handoffs: HandoffView = "own", tools: list[ToolSpec] | None = None,
) -> LogDelta:
    """The delta for a reader holding `log[:log_start]` and `shared[:shared_start]`, for a view
    as of log length `upto`. A reader claiming more than exists is sent everything from 0."""
    if log_start > len(transcript.log) or shared_start > len(transcript.shared):
        log_start = shared_start = 0
    end = min(upto, len(transcript.log))
    return LogDelta(
        log_start=log_start,
        messages=transcript.log[log_start:end] if log_start < end else [],
        shared_start=shared_start,
        shared=transcript.shared[shared_start:],
        runs=dict(transcript.runs),
        handoffs=handoffs,
        tools=tools,
    )


def merge_delta(log: list[Message], shared: list[int], delta: LogDelta, upto: int) -> tuple[int, HandoffView]:
    """Merge `delta` into a reader's `log` and `shared` prefixes (in place); returns the length of
    `shared` the delta saw and the handoff view to build with.

    Several readers may merge overlapping deltas of the same log in any order: only what extends
    the prefixes is added, and the view is built from the prefixes as long as this delta saw them.
    """
    if delta.log_start > len(log) or delta.shared_start > len(shared):
        raise ValueError(
            f"log delta starts at {delta.log_start}/{delta.shared_start}, past the reader's "
            f"prefix ({len(log)}/{len(shared)})"
        )
    log_end = delta.log_start + len(delta.messages)
    if log_end > len(log):
        log.extend(delta.messages[len(log) - delta.log_start:])
    shared_end = delta.shared_start + len(delta.shared)
    if shared_end > len(shared):
        shared.extend(delta.shared[len(shared) - delta.shared_start:])
    if upto > len(log):
        raise ValueError(f"a view as of {upto} messages needs the log that far; it has {len(log)}")
    return shared_end, delta.handoffs
