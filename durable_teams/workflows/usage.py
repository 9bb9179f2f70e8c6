"""Token usage: what every model call reported, summed per conversation, per turn, per agent
and per model, and the token budgets that end a turn. Pure data and arithmetic.

The ledger lives in `ConversationState` (so continue-as-new carries it). A nested team's
child workflow returns its ledger with its result and the parent adds it in, agent by agent
(agent names are unique across a team tree), so a delegate's tokens are never lost. While it
runs, the child spends what is left of its parent's token budgets (`child_budgets`): each
level checks before every model call, so a team of teams overshoots by at most one call.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from .messages import Budgets, Message, Usage
from .wire_base import Reply, Wire


class Tally(Reply):
    """Tokens and model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Tally) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.model_calls += other.model_calls


class ModelPrice(Wire):
    """What a model costs, in your currency per million tokens."""

    input_per_million: float
    output_per_million: float


class UsageLedger(Reply):
    """Usage of a conversation: in total, in its current (or last) turn, by agent, by model."""

    total: Tally = Field(default_factory=Tally)
    turn: Tally = Field(default_factory=Tally)
    turn_number: int = 0
    """Which turn `turn` counts."""
    by_agent: dict[str, Tally] = Field(default_factory=dict)
    by_model: dict[str, Tally] = Field(default_factory=dict)

    def cost(self, prices: dict[str, ModelPrice]) -> float | None:
        """The cost of every model call at `prices`; None if a model used has no price."""
        total = 0.0
        for model, tally in self.by_model.items():
            price = prices.get(model)
            if price is None:
                return None
            total += (tally.input_tokens * price.input_per_million
                      + tally.output_tokens * price.output_per_million) / 1_000_000
        return total


def _turn(ledger: UsageLedger, turn: int) -> Tally:
    if ledger.turn_number != turn:
        ledger.turn, ledger.turn_number = Tally(), turn
    return ledger.turn


def record(ledger: UsageLedger, turn: int, agent: str, model: str, usage: Usage) -> None:
    """Add one model call's usage."""
    call = Tally(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens, model_calls=1)
    for tally in (ledger.total, _turn(ledger, turn), ledger.by_agent.setdefault(agent, Tally()),
                  ledger.by_model.setdefault(model, Tally())):
        tally.add(call)


def add_child(ledger: UsageLedger, turn: int, child: UsageLedger) -> None:
    """Add what a child workflow (a nested team) used, keeping its per-agent detail."""
    ledger.total.add(child.total)
    _turn(ledger, turn).add(child.total)
    for name, tally in child.by_agent.items():
        ledger.by_agent.setdefault(name, Tally()).add(tally)
    for model, tally in child.by_model.items():
        ledger.by_model.setdefault(model, Tally()).add(tally)


def of_turn(ledger: UsageLedger, turn: int) -> Tally:
    """What turn `turn` used (nothing if it made no model call)."""
    return ledger.turn.model_copy() if ledger.turn_number == turn else Tally()


def current_turn(queue: list, turns_started: int) -> int:
    """The turn being answered: the head of the queue (popped once it is answered)."""
    return queue[0][0] if queue else turns_started


def over_budget(ledger: UsageLedger, turn: int, budgets: Budgets) -> str | None:
    """Why no further model call may be made (a token budget is spent), or None."""
    used_turn = ledger.turn.total_tokens if ledger.turn_number == turn else 0
    limit = budgets.max_tokens_per_turn
    if limit is not None and used_turn >= limit:
        return (f"Stopped: this turn used {used_turn:,} tokens, its budget is {limit:,} tokens, "
                "before an agent gave a final answer.")
    limit = budgets.max_tokens_per_conversation
    if limit is not None and ledger.total.total_tokens >= limit:
        return (f"Stopped: this conversation used {ledger.total.total_tokens:,} tokens, its "
                f"budget is {limit:,} tokens.")
    return None


def _left(limit: int | None, used: int, share: int) -> int | None:
    return None if limit is None else max(limit - used, 0) // share


def child_budgets(own: Budgets, ledger: UsageLedger, turn: int, parent: Budgets, share: int = 1) -> Budgets:
    """A nested team's budgets (`own`), its token limits cut to what is left of the parent's
    turn and conversation budgets. `share` children starting at once split what is left, so
    together they stay within it (a child cannot see what its siblings spend)."""
    used_turn = ledger.turn.total_tokens if ledger.turn_number == turn else 0
    limits = {"max_tokens_per_turn": _left(parent.max_tokens_per_turn, used_turn, share),
              "max_tokens_per_conversation": _left(parent.max_tokens_per_conversation,
                                                   ledger.total.total_tokens, share)}
    # The child answers one turn: its turn and its conversation are the same tokens.
    return own.model_copy(update={name: _min(getattr(own, name), left) for name, left in limits.items()})


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def last_answer(log: Sequence[Message], start: int) -> Message | None:
    """The latest answer an agent gave in `log[start:]`: an assistant message with text and no
    tool call (not a handoff, an error or a budget stop)."""
    for message in reversed(log[start:]):
        if (message.role == "assistant" and message.kind == "message" and not message.tool_calls
                and (message.content or "").strip()):
            return message
    return None


def request_index(log: Sequence[Message], has_request: bool) -> int:
    """Where a turn resumed after continue-as-new began: at its user message. A nested team's
    turn has none (it answers its parent's history): nothing before the resume is quoted."""
    if not has_request:
        return len(log)
    return max((i for i, m in enumerate(log) if m.role == "user" and m.agent_run == 0), default=0)


def stopped_text(stop: str, answered: Message | None) -> str:
    """What a user reads when a budget ends a turn: why, then what was answered before it."""
    if answered is None:
        return stop
    return f"{stop}\n\nBefore the stop, {answered.name or 'an agent'} answered:\n{answered.content}"
