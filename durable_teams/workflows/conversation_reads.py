"""What a client reads from a conversation without changing it: the results of its queries
(`status`, `log_page`, `waiting_tools`: workflows/conversation_queries.py) and the `turn_outcome`
update's argument and result (workflows/turn_waits.py). Wire types, read back by older and
newer clients alike (`Reply`)."""

from __future__ import annotations

from pydantic import Field

from .messages import Message, RoutingDecision
from .state import HIDDEN_STEPS, HumanReply, Question, RefusedSignal, TurnReply
from .usage import UsageLedger
from .wire_base import Reply, Wire


class ConversationStatus(Reply):
    """What the `status` query returns."""

    active_agent: str | None
    turns: int
    model_calls: int
    pending: list[Question]
    queued_turns: int
    last_reply: TurnReply | None
    closed: bool
    ignored_replies: list[HumanReply] = Field(default_factory=list)
    last_decision: RoutingDecision | None = None
    """The latest routing decision (strategies other than "llm")."""
    children: list[str] = Field(default_factory=list)
    """Child workflows (nested teams, agents run as children) running now: a question one of
    them asks is listed, and answered, under the child's workflow id."""
    refused_signals: list[RefusedSignal] = Field(default_factory=list)
    """The latest signals that were refused (malformed, unknown, blank or oversized turns),
    with the reason; `refused_signal_count` counts them all."""
    refused_signal_count: int = 0
    usage: UsageLedger | None = None
    """Tokens used so far (workflows/usage.py)."""
    last_input_id: str | None = None
    """The id of the latest input the conversation took: a new turn's `turn_id` or an answer's
    `input_id` (None when it had none). A client that resends what it saw (the gateway's chat
    clients) tells from it whether the conversation is where it left it."""
    previous_input_id: str | None = None
    forked_from: str | None = None
    """`<thread id>@<checkpoint id>` when this conversation is a fork of another."""
    hidden_steps: list[str] = Field(default_factory=list, validation_alias=HIDDEN_STEPS)
    """Steps hidden from readers (workflows/hidden_steps.py)."""
    working_turn: int | None = None
    """The turn the conversation works on (the head of its queue), or its latest when none is
    queued. None from a worker of an earlier release (`turn_states.answering` then counts)."""
    history_length: int | None = None
    """The conversation's history length this status reflects (as `LogPage.history_length`):
    a reader that knows it need not read again for a workflow task that started at or before
    it (durable_teams/client/step_watch.py). None from earlier workers."""


class LogPage(Reply):
    """What the `log_page` query returns: part of the whole log, for followers."""

    start: int
    messages: list[Message]
    total: int
    """len(log) now: more to read while start + len(messages) < total."""
    shared: list[int] = Field(default_factory=list)
    """The log indices in this page that belong to the shared conversation now (a worker's
    answer joins it when the worker finishes, though written in the worker's own scope)."""
    history_length: int | None = None
    """The conversation's history length the page reflects (the events its workflow had taken
    when it answered): a reader that knows it need not read again for a workflow task that
    started at or before it (durable_teams/client/step_watch.py). None from earlier workers."""


class WaitingTools(Reply):
    """What the `waiting_tools` query returns: an agent's tools that wait for a person."""

    approval: list[str] = Field(default_factory=list)
    """Those that need approval before they run."""
    breakpoint: list[str] = Field(default_factory=list)
    """Those that pause at a breakpoint before or after they run."""


class OutcomeWait(Wire):
    """What the `turn_outcome` update waits for: turn `turn`'s outcome. With `seen` (the ids of
    the questions the waiter already knows of), a question the conversation asks a person that
    is not among them is an outcome too; without it, only the reply is."""

    turn: int
    seen: list[str] | None = None


class TurnOutcome(Reply):
    """What the `turn_outcome` update returns: the turn's `reply`, or a `question` it waits on,
    or neither when the conversation no longer keeps the turn's reply (`gone`)."""

    turn: int
    reply: TurnReply | None = None
    question: Question | None = None
    gone: bool = False
