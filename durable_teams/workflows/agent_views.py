"""Agents' views of one workflow run's transcript, built incrementally. Pure: no Temporal imports.

`Transcript.view` walks the whole log on every call, so a model call's view cost O(transcript):
at 1,000 model calls, milliseconds per call. Within a run the log and the shared index only grow
at their ends (the rule `Transcript` keeps), so a view read at (log length L, shared length S)
is a prefix-stable function of those prefixes, and the view at a later (L', S') extends it:

- the shared conversation (agent run 0): the shared entries, in order, that are below L and not
  notices. Entries folded in already stay; only `shared[consumed:S']` is new. An entry at or past
  L (a run folded in after the read was scheduled) stops the fold: it and what follows are
  filtered for this read only, and read again next time;
- a worker's run k: its prefix (the shared conversation when the run began, handoffs stripped as
  the team shows them) is fixed once every entry in it lies below L; its own messages are those of
  run k in `log[scanned:L']`.

A read older than what a cursor holds (a retried call's view, scheduled before the last one) is
built from scratch and leaves the cursor alone. `tests/test_agent_views.py` checks every view
against `Transcript.view` after every append, fold, retry and continue-as-new.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from .handoff import HandoffView, strip_foreign_handoffs, strip_siblings
from .messages import Message
from .transcript import Transcript

_HIDDEN_FROM_WORKERS = ("routing", "notice")


@dataclass(eq=False)
class _Shared:
    consumed: int = 0
    """Shared entries folded into `messages` (each below `upto`)."""
    upto: int = 0
    messages: list[Message] = field(default_factory=list)


@dataclass(eq=False)
class _Run:
    prefix: list[Message] | None = None
    """The run's fixed prefix, once every entry in it lies below the log length read."""
    scanned: int = 0
    own: list[Message] = field(default_factory=list)


class ViewBuilder:
    """Views of one workflow run's transcript, each extended from the last read of the same
    agent run (at most `max_cursors` kept, least recently used out)."""

    def __init__(self, max_cursors: int = 8) -> None:
        self.max_cursors = max_cursors
        self._cursors: OrderedDict[tuple[int, HandoffView], _Shared | _Run] = OrderedDict()

    def view(self, transcript: Transcript, agent_run: int, upto: int, shared_length: int,
             handoffs: HandoffView = "own") -> list[Message]:
        """`Transcript.of(log[:upto], shared[:shared_length], runs).view(agent_run, upto,
        handoffs)` of `transcript`, which must hold that much (KeyError for an unknown run)."""
        if agent_run == 0:
            messages = self._shared_view(transcript, upto, shared_length)
            return strip_foreign_handoffs(messages, None) if handoffs == "none" else messages
        return self._run_view(transcript, agent_run, upto, shared_length, handoffs)

    def _cursor(self, key: tuple[int, HandoffView], fresh: _Shared | _Run) -> _Shared | _Run:
        cursor = self._cursors.get(key)
        if cursor is None:
            cursor = self._cursors[key] = fresh
            while len(self._cursors) > self.max_cursors:
                self._cursors.popitem(last=False)
        self._cursors.move_to_end(key)
        return cursor

    def _shared_view(self, transcript: Transcript, upto: int, shared_length: int) -> list[Message]:
        cursor = self._cursor((0, "own"), _Shared())
        assert isinstance(cursor, _Shared)
        if upto < cursor.upto or shared_length < cursor.consumed:
            cursor = _Shared()  # an older read: from scratch, the cursor untouched
        log = transcript.log
        entries = transcript.shared[cursor.consumed:shared_length]
        folded = 0
        for i in entries:
            if i >= upto:
                break
            folded += 1
            message = log[i]
            if message.kind != "notice":
                cursor.messages.append(message)
        cursor.consumed += folded
        cursor.upto = max(cursor.upto, upto)
        rest = [log[i] for i in entries[folded:] if i < upto and log[i].kind != "notice"]
        return cursor.messages + rest

    def _run_view(self, transcript: Transcript, agent_run: int, upto: int, shared_length: int,
                  handoffs: HandoffView) -> list[Message]:
        run = transcript.run(agent_run)
        if run is None:
            raise KeyError(agent_run)
        cursor = self._cursor((agent_run, handoffs), _Run())
        assert isinstance(cursor, _Run)
        if upto < cursor.scanned:
            cursor = _Run()  # an older read: from scratch, the cursor untouched
        prefix = cursor.prefix
        if prefix is None:
            log = transcript.log
            head = transcript.shared[:min(run.shared_start, shared_length)]
            seen = [log[i] for i in head if i < upto and log[i].kind not in _HIDDEN_FROM_WORKERS]
            if handoffs == "all":
                prefix = strip_siblings(seen, run.handoff_call_id)
            else:
                prefix = strip_foreign_handoffs(seen, run.handoff_call_id if handoffs == "own" else None)
            if shared_length >= run.shared_start and all(i < upto for i in head):
                cursor.prefix = prefix  # no later read can change it
        if upto > cursor.scanned:
            cursor.own.extend(m for m in transcript.log[cursor.scanned:upto] if m.agent_run == agent_run)
            cursor.scanned = upto
        return prefix + cursor.own
