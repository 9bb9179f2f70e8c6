"""Conversation-level wire types: workflow input and result, turns, questions, replies."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, Field

from .messages import Message, RoutingDecision, TeamSpec
from .transcript import Transcript
from .usage import Tally, UsageLedger
from .wire_base import Reply, Wire, agent_run_field, left_out_when_unset, optional_cap

TurnStatus = Literal["completed", "truncated", "filtered", "budget_exceeded", "failed", "cancelled"]
"""How a turn ended: "completed" (an answer), "truncated" (the answer the model gave was cut
off at its token limit: finish_reason "length"), "filtered" (the endpoint's content filter
stopped it: finish_reason "content_filter"), "budget_exceeded" (a `Budgets` limit stopped the
turn), "failed" (the model kept failing; the text says why)."""

Flag = Literal["truncated", "filtered"]

HIDDEN_STEPS = AliasChoices("hidden_steps", "deleted_responses")
"""`hidden_steps` as read: also under the name runs recorded before it had (replay)."""


def flagged(finish_reason: str | None) -> Flag | None:
    """The flag an agent's final answer carries for the model's `finish_reason`, if any."""
    return {"length": "truncated", "content_filter": "filtered"}.get(finish_reason or "")  # type: ignore[return-value]


class UserTurn(Wire):
    """A user's message to the team (update `submit_turn` or signal `post_message`)."""

    text: str
    sender: str | None = None
    max_tokens: int | None = optional_cap()
    """The most tokens each model call of this turn may write (None: the agents' settings)."""
    turn_id: str | None = None
    """A client-chosen id that makes sending idempotent: a turn re-sent with the same id (after
    a continue-as-new cut its update off, say) waits for the same reply instead of running
    twice. `durable_teams.client.send.send_turn` sets one."""
    after_turns: int | None = left_out_when_unset(ge=0)
    """Accept the turn only while the conversation has started exactly this many turns (a
    client that chose this conversation by what it last saw, like the gateway for chat
    clients, learns that another request got in first instead of adding to it)."""
    interrupt_before: list[str] | None = left_out_when_unset(max_length=100)
    """This turn's own breakpoints (a LangGraph run's `interrupt_before`): pause before these
    agents run, besides the team's (workflows/breakpoints.py); "*" names every agent."""
    interrupt_after: list[str] | None = left_out_when_unset(max_length=100)
    """This turn's breakpoints after these agents' runs (a LangGraph run's `interrupt_after`)."""
    metadata: dict[str, Any] | None = left_out_when_unset()
    """A client's notes on this turn (a LangGraph run's `metadata`): kept with its reply (query
    `turn_metadata`), never shown to a model."""


class TurnReply(Reply):
    """The team's answer to one turn."""

    turn: int
    text: str
    agent: str
    status: TurnStatus = "completed"
    structured: dict[str, Any] | None = None
    usage: Tally | None = None
    """Tokens and model calls of this turn (nested teams included)."""
    metadata: dict[str, Any] | None = left_out_when_unset()
    """The turn's `UserTurn.metadata`, kept with its reply."""
    before_stop: Message | None = None
    """With status "budget_exceeded": the latest answer an agent gave in the turn before the
    budget stopped it (also quoted in `text`), None if none did."""


class Question(Wire):
    """A question waiting for a person: from `ask_human`, or an approval of a tool call."""

    question_id: str
    kind: Literal["question", "approval"] = "question"
    text: str
    agent: str
    suggestions: list[str] = Field(default_factory=list)
    asked_at: datetime
    timeout_seconds: float
    tool: str | None = None
    arguments: str | None = None
    default_answer: str | None = None
    tool_call_id: str | None = None
    """The model's call this question answers: a turn resumed after continue-as-new re-attaches
    to the question instead of asking again."""
    breakpoint: bool = Field(default=False, exclude_if=lambda value: not value)
    """An approval asked by a breakpoint (workflows/breakpoints.py): before a tool call (its
    answer may edit the arguments), after one (it may edit the result), or around an agent's
    run (`tool` None)."""
    after: bool = Field(default=False, exclude_if=lambda value: not value)
    """A breakpoint after its step (`interrupt_after`), not before it."""
    result: str | None = left_out_when_unset()
    """A breakpoint after its step: the tool's result, or what the agent answered or whom it
    hands off to."""

    @property
    def step(self) -> str:
        """What an approval decides on, in a line: the tool call, or a breakpoint's step."""
        call = f"{self.tool}({self.arguments})"
        if not self.breakpoint:
            return call
        if self.tool is None:
            return (f"breakpoint after {self.agent}: {self.result}" if self.after
                    else f"breakpoint before {self.agent} runs")
        return f"breakpoint after {call} returned: {self.result}" if self.after else f"breakpoint before {call}"


class ClientMetadata(Wire):
    """A client's own notes on the conversation (update `set_client_metadata`): kept in its
    memo under `<client>_metadata` (a LangGraph thread's `metadata`), shown in lists, never to
    a model. Merged into what is there, key by key."""

    client: str = Field(pattern=r"^[a-z][a-z0-9]{0,19}$")
    metadata: dict[str, Any]


class HumanReply(Wire):
    """An answer (signal `human_reply` or update `answer`). For approvals, `approved` decides;
    `text` is then an optional reason."""

    question_id: str
    text: str = ""
    approved: bool | None = None
    input_id: str | None = left_out_when_unset(max_length=256)
    """The client's id of the request this answer came from (`ConversationStatus.last_input_id`)."""
    arguments: str | None = left_out_when_unset(max_length=65_536)
    """A breakpoint's approval only: the tool call's arguments (a JSON object) to run it with."""
    result: str | None = left_out_when_unset(max_length=262_144)
    """A breakpoint after a tool call only: the result the model sees instead of the tool's."""


class AnswerAck(Reply):
    question_id: str
    accepted: bool = True


class AnswerOutcome(Reply):
    """Whether an answer sent with an `input_id` was taken; if not, why, and whether its question was
    no longer open (answered by another, or never asked)."""

    taken: bool
    reason: str = ""
    closed: bool = False
    turn: int | None = left_out_when_unset()
    """The turn that was being answered when it came (its reply is the answer's outcome)."""


class TurnProgress(Wire):
    """Where a turn stood when the run continued as new in the middle of it (only ever while
    an agent waited for a person): the agent run to resume and the turn's budget so far."""

    turn: int
    agent: str
    agent_run: int = agent_run_field(wire_name="view_id")
    direct: bool = False
    """The turn was addressed to the agent with `@agent`."""
    model_calls: int = 0
    handoffs: int = 0
    tool_calls: int = 0


class RefusedSignal(Wire):
    """A signal the workflow could not use (malformed, unknown, or refused like a blank
    message): kept for the `status` query, with a note in the transcript, because a signal's
    sender gets no answer."""

    signal: str
    reason: str
    at: datetime


class ConversationState(Wire):
    """Everything carried across continue-as-new."""

    transcript: Transcript = Field(default_factory=Transcript)
    active_agent: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    turns_started: int = 0
    replies: dict[int, TurnReply] = Field(default_factory=dict)
    queue: list[tuple[int, UserTurn]] = Field(default_factory=list)
    questions_asked: int = 0
    pending: dict[str, Question] = Field(default_factory=dict)
    answers: dict[str, HumanReply] = Field(default_factory=dict)
    ignored_replies: list[HumanReply] = Field(default_factory=list)
    model_calls_by_agent: dict[str, int] = Field(default_factory=dict)
    assignments: dict[str, int] = Field(default_factory=dict)
    total_model_calls: int = 0
    turn_ids: dict[str, int] = Field(default_factory=dict)
    """Client turn ids -> turn numbers, for idempotent sends."""
    labels: list[str] | None = left_out_when_unset()
    """The search attributes the namespace has, once asked (workflows/labels.py): carried, so a
    run resumed after continue-as-new does not ask again before it re-attaches to a question
    (asking made each such run as long as the one before, in a team that continues as new
    after a few events: a loop of runs)."""
    last_input_id: str | None = left_out_when_unset()
    """The id of the latest input taken (a new turn's `turn_id`, an answer's `input_id`)."""
    previous_input_id: str | None = left_out_when_unset()
    """The one before it."""
    answer_outcomes: dict[str, AnswerOutcome] = Field(default_factory=dict, exclude_if=lambda value: not value)
    """What became of the latest answers sent as the `human_reply` signal with an `input_id`
    (at most `intake.KEEP_OUTCOMES`), for the `answer_outcome` query: where updates are off,
    how a client learns whether its answer was taken. Left off the wire while empty."""
    in_progress: TurnProgress | None = None
    answered_calls: dict[str, Message] = Field(default_factory=dict)
    """Answers to the tool calls of the batch being answered now, kept as they arrive so a turn
    resumed after continue-as-new does not run a finished tool or ask a question twice."""
    runs: int = 1
    """How many workflow runs this conversation has had (continue-as-new count + 1)."""
    routing_decisions: int = 0
    """Decisions made by a routing strategy so far (round-robin's counter)."""
    last_decision: RoutingDecision | None = None
    refused_signals: list[RefusedSignal] = Field(default_factory=list)
    """The latest refused signals (at most `inputs.KEEP_REFUSED`)."""
    refused_signal_count: int = 0
    usage: UsageLedger = Field(default_factory=UsageLedger)
    """Tokens used: in total, per turn, per agent, per model (workflows/usage.py)."""
    hidden_steps: list[str] = Field(default_factory=list, exclude_if=lambda value: not value,
                                    validation_alias=HIDDEN_STEPS)
    """Steps hidden from readers (`<turn>_<log index>_<step>`, workflows/hidden_steps.py): no
    longer served by the gateway; the log keeps their messages. Left off the wire while empty."""


class ConversationInput(Wire):
    """Workflow input. Give `team` (a full spec) or `team_name` (resolved once on the worker
    and recorded in history, so the CLI and `temporal workflow start` can name a team)."""

    team: TeamSpec | None = None
    team_name: str | None = None
    task: str | None = None
    """The first user turn, if any."""
    single_turn: bool = True
    """True: answer `task` and complete (a one-shot run). False: a multi-turn conversation
    that waits for turns until closed."""
    context: dict[str, Any] = Field(default_factory=dict)
    set_search_attributes: bool = True
    """Mark conversations waiting for a person with the `AwaitingHuman` search attribute (the
    server must have it registered; the embedded server and docker-compose do)."""
    history: list[Message] = Field(default_factory=list)
    """Messages the conversation opens with: a nested team's view of its parent's conversation
    (workflows/children.py). With no `task`, the first turn answers the history as it stands,
    adding no user message."""
    # The two fields below came after the first releases: left off the wire at their defaults,
    # so a client upgraded before its workers starts conversations they can still read.
    answer_history: bool = Field(default=True, exclude_if=lambda value: value is True)
    """With `history` and no `task`: the first turn answers the history as it stands (a nested
    team). False: the history is context, and the conversation waits for its first turn."""
    idle_close_seconds: float | None = left_out_when_unset(gt=0)
    """Close the conversation when no turn comes for this long after its last reply, and let a
    question wait at most this long (a chat thread whose chat moved on is not left waiting for
    a day). None: wait for turns until closed, questions as long as the team says."""
    state: ConversationState | None = None
    """Set by continue-as-new, and by a fork (with `forked_from`)."""
    forked_from: str | None = left_out_when_unset(max_length=1000)
    """A fork's origin, `<thread id>@<checkpoint id>` (durable_teams/client/time_travel.py): the
    run starts on `state`, the original's state at that checkpoint, and `task`, if set, is its
    first turn. Left out otherwise, so other inputs (and recorded histories) read as before."""


class ConversationResult(Reply):
    answer: str
    agent: str
    status: TurnStatus
    turns: int
    model_calls: int
    structured: dict[str, Any] | None = None
    runs: int = 1
    """Workflow runs the conversation took (continue-as-new makes more than one)."""
    context: dict[str, Any] = Field(default_factory=dict)
    """The context variables at the end (a nested team's flow back into its parent's)."""
    usage: UsageLedger | None = None
    """Tokens used by the whole conversation (a nested team's flow into its parent's)."""
    before_stop: Message | None = None
    """As `TurnReply.before_stop`: what a nested team had answered when a budget stopped it."""
