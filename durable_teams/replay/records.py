"""What one run of a conversation did, as plain data: its turns, model calls, tool runs and
questions, in order. Read from a history (history_records.py) for the recorded run and for the
candidate's run alike, so the two compare field by field (comparison.py)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Served = Literal["run", "recorded", "live", "stand-in"]
"""How a tool call got its result: "run" (for real, in the recorded conversation), "recorded"
(the replay reused the record's result), "live" (the replay ran it: an idempotent tool, with
live tools allowed), "stand-in" (the replay answered with a marked stand-in; it did not run)."""


def canonical_arguments(arguments: str | None) -> str:
    """A tool call's arguments in one spelling (keys sorted, no spaces), so two calls with the
    same arguments match however the model wrote them; text that is not JSON is kept as is."""
    text = arguments or "{}"
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text.strip()


@dataclass
class ModelCall:
    agent: str
    model: str
    content: str
    calls: list[tuple[str, str]]
    """The tool calls the reply asked for: (name, arguments as sent)."""
    turn: int
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    kind: Literal["model"] = "model"


@dataclass
class ToolRun:
    tool: str
    arguments: str
    result: str
    agent: str
    turn: int
    is_error: bool = False
    seconds: float = 0.0
    served: Served = "run"
    context_updates: dict[str, Any] = field(default_factory=dict)
    handoff_to: str | None = None
    """What else the result carried: context variables it set, an agent it handed off to."""
    kind: Literal["tool"] = "tool"

    @property
    def key(self) -> tuple[str, str]:
        return self.tool, canonical_arguments(self.arguments)


@dataclass
class Asked:
    """A question a person was asked (`ask_human`) or an approval of a tool call, and the answer."""

    question_id: str
    question: Literal["question", "approval"]
    agent: str
    text: str
    turn: int
    tool: str | None = None
    arguments: str | None = None
    answer: str | None = None
    approved: bool | None = None
    answered_by: str = "person"
    """"person" (the record), "record" / "answers file" (the replay), "" (not answered)."""
    seconds_waited: float = 0.0
    kind: Literal["asked"] = "asked"


Step = ModelCall | ToolRun | Asked


@dataclass
class TurnRecord:
    number: int
    text: str
    answer: str = ""
    agent: str = ""
    seconds: float = 0.0
    """From the turn's start to its last step, less the time questions waited for a person."""


@dataclass
class Record:
    """One run of one conversation."""

    workflow_id: str
    team: str
    spec: dict[str, Any] | None
    """The team as the run had it (TeamSpec as JSON), when its history holds it."""
    task: str | None
    single_turn: bool
    context: dict[str, Any] = field(default_factory=dict)
    turns: list[TurnRecord] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    status: str = "running"
    """"completed", "failed", "terminated", "continued" (continued as new), "running", or a
    replay's "stopped" (a question the record does not answer)."""
    notes: list[str] = field(default_factory=list)

    @property
    def model_calls(self) -> list[ModelCall]:
        return [s for s in self.steps if isinstance(s, ModelCall)]

    @property
    def tool_runs(self) -> list[ToolRun]:
        return [s for s in self.steps if isinstance(s, ToolRun)]

    @property
    def asked(self) -> list[Asked]:
        return [s for s in self.steps if isinstance(s, Asked)]

    @property
    def agents_visited(self) -> list[str]:
        """The agents that took a step, in order, a run of steps by one agent counted once."""
        visited: list[str] = []
        for call in self.model_calls:
            if not visited or visited[-1] != call.agent:
                visited.append(call.agent)
        return visited

    @property
    def tokens(self) -> tuple[int, int]:
        calls = self.model_calls
        return sum(c.input_tokens for c in calls), sum(c.output_tokens for c in calls)

    @property
    def seconds(self) -> float:
        return sum(t.seconds for t in self.turns)

    @property
    def final_answer(self) -> str:
        return self.turns[-1].answer if self.turns else ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["agents_visited"] = self.agents_visited
        return data
