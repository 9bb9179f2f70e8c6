"""The conversation's transcript and the per-agent views of it. Pure: no Temporal imports.

Every message ever produced is appended once to `log`. Agents see *views* built from it:

- `shared` lists the log indices that form the conversation everyone shares (the supervisor's
  view). With `output_mode="full_history"` a worker's whole run is added to it when the worker
  finishes; with `"last_message"` only its final answer is.
- A worker's run k sees the shared conversation as it was when it was handed the task, plus
  its own private messages (scope k). Handoff artifacts of *other* runs are stripped, so a
  worker is never shown a `transfer_*` call to a tool it does not own (the langgraph-supervisor
  trap where workers invent `transfer_back_to_supervisor`).

Views read the log only up to a given length, so a model call retried later sees exactly the
view it was scheduled with, even if parallel agents appended messages in between.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .messages import Message, OutputMode, Reply, ToolCall, ToolSpec, Wire

HandoffView = Literal["none", "own", "all"]
"""What a worker is shown of the handoffs in the shared conversation before its run:
"own": only the handoff call that engaged it (the default: a worker is never shown calls to
`transfer_*` tools it does not have, which weaker models imitate); "all": every handoff call and
hand-back pair, as langgraph-supervisor shows them with `add_handoff_messages=True`; "none": no
handoff messages at all, not even to the supervisor (`add_handoff_messages=False`)."""


class AgentRun(Wire):
    """One engagement of a worker agent: its private scope and where its view starts."""

    id: int
    agent: str
    shared_start: int
    """len(shared) when the run began: the worker sees shared[:shared_start]."""
    handoff_call_id: str | None = None
    done: bool = False


class Transcript(Wire):
    log: list[Message] = Field(default_factory=list)
    shared: list[int] = Field(default_factory=list)
    runs: dict[int, AgentRun] = Field(default_factory=dict)

    def append(self, message: Message) -> int:
        """Append to the log (and to the shared conversation if scope 0); returns the index."""
        self.log.append(message)
        index = len(self.log) - 1
        if message.scope == 0:
            self.shared.append(index)
        return index

    def start_run(self, agent: str, handoff_call_id: str | None) -> AgentRun:
        run = AgentRun(
            id=len(self.runs) + 1,
            agent=agent,
            shared_start=len(self.shared),
            handoff_call_id=handoff_call_id,
        )
        self.runs[run.id] = run
        return run

    def run_messages(self, run_id: int, upto: int | None = None) -> list[int]:
        end = len(self.log) if upto is None else upto
        return [i for i in range(end) if self.log[i].scope == run_id]

    def finish_run(self, run_id: int, output_mode: OutputMode) -> list[int]:
        """Fold a finished run into the shared conversation; returns the indices added."""
        run = self.runs[run_id]
        run.done = True
        own = self.run_messages(run_id)
        if output_mode == "last_message":
            own = last_answer(self.log, own)
        self.shared.extend(own)
        return own

    def shared_messages(self, upto: int | None = None) -> list[Message]:
        end = len(self.log) if upto is None else upto
        return [self.log[i] for i in self.shared if i < end]

    def view(self, view_id: int, upto: int | None = None, handoffs: HandoffView = "own") -> list[Message]:
        """The messages agent run `view_id` sees (0: the shared conversation).

        `handoffs` is what a worker is shown of handoff calls and their tool messages (they
        always stay in the log, for audit): see `HandoffView`. The shared conversation shows
        them all unless it is "none".
        """
        if view_id == 0:
            shared = self.shared_messages(upto)
            return strip_foreign_handoffs(shared, None) if handoffs == "none" else shared
        run = self.runs[view_id]
        end = len(self.log) if upto is None else upto
        # Routing records are for people and audits: no worker is shown them.
        prefix = [self.log[i] for i in self.shared[: run.shared_start]
                  if i < end and self.log[i].kind != "routing"]
        own = [self.log[i] for i in self.run_messages(view_id, end)]
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


def handoff_call_ids(messages: list[Message]) -> set[str]:
    """Ids of tool calls that are handoff artifacts (answered by a handoff tool message)."""
    return {
        m.tool_call_id
        for m in messages
        if m.role == "tool" and m.kind in ("handoff", "handoff_back") and m.tool_call_id
    }


def strip_siblings(messages: list[Message], keep_call_id: str | None) -> list[Message]:
    """Every handoff stays, except the calls made beside the one that started this run (a
    parallel handoff): the worker sees the supervisor's message filtered to its own call."""
    siblings = _siblings(messages, keep_call_id)
    return _drop_calls(messages, siblings) if siblings else messages


def _siblings(messages: list[Message], keep_call_id: str | None) -> set[str]:
    if keep_call_id is not None:
        for m in messages:
            if any(c.id == keep_call_id for c in m.tool_calls):
                return {c.id for c in m.tool_calls if c.id != keep_call_id}
    return set()


def strip_foreign_handoffs(messages: list[Message], keep_call_id: str | None) -> list[Message]:
    """Remove handoff calls and their tool messages, except the one that started this run.

    An assistant message left with neither text nor calls is dropped. Tool messages that answer
    a call dropped this way are dropped too, so the view stays valid Chat Completions input.
    When the kept handoff came with sibling calls (parallel handoff, or a handoff mixed with a
    tool call), the worker sees the supervisor's message filtered to its own call, as
    langgraph-supervisor does for parallel handoffs.
    """
    drop = (handoff_call_ids(messages) | _siblings(messages, keep_call_id)) - {keep_call_id}
    return _drop_calls(messages, drop)


def _drop_calls(messages: list[Message], drop: set[str]) -> list[Message]:
    """Messages without the calls in `drop` and their tool messages; an assistant message left
    with neither text nor calls (or a hand-back) is dropped."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool" and m.tool_call_id in drop:
            continue
        if m.tool_calls and any(c.id in drop for c in m.tool_calls):
            calls: list[ToolCall] = [c for c in m.tool_calls if c.id not in drop]
            if not calls and (not m.content or m.kind == "handoff_back"):
                continue
            m = m.model_copy(update={"tool_calls": calls})
        out.append(m)
    return out


# ---- reading the log incrementally (the model activity's cache) ---------------------------------


class LogDelta(Reply):
    """What the `model_view_delta` query returns: the part of the log (and of `shared`) a reader
    holding a prefix has not seen yet, plus the small bookkeeping a view needs.

    A reader that already holds `log[:log_start]` and `shared[:shared_start]` rebuilds exactly
    the view `Transcript.view` gives, with `view_from_delta`. Correct because, within one workflow
    run, `log` and `shared` only ever grow at the end (`append`, `finish_run`); a new run (after
    continue-as-new) has a new run id, so a reader keyed by run id starts from 0.
    """

    log_start: int
    messages: list[Message]
    """log[log_start:upto]."""
    shared_start: int
    shared: list[int]
    """shared[shared_start:], as the workflow holds it now."""
    runs: dict[int, AgentRun]
    show_handoffs: bool = True
    all_handoffs: bool = False
    """With `show_handoffs`, the `HandoffView` the view is built with (two flags, so a reader
    older than "all" still reads the other two)."""
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
        runs=transcript.runs,
        show_handoffs=handoffs != "none",
        all_handoffs=handoffs == "all",
        tools=tools,
    )


def view_from_delta(
    log: list[Message], shared: list[int], delta: LogDelta, view_id: int, upto: int
) -> list[Message]:
    """Merge `delta` into a reader's `log` and `shared` prefixes (in place) and return the view
    `Transcript.view(view_id, upto, handoffs)` the workflow would have returned.

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
    transcript = Transcript.model_construct(
        log=log[:upto], shared=shared[:shared_end], runs=delta.runs
    )
    handoffs: HandoffView = ("all" if delta.all_handoffs else "own") if delta.show_handoffs else "none"
    return transcript.view(view_id, upto, handoffs=handoffs)
