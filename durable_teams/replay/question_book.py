"""Who answers the candidate's questions during a replay (pure).

An approval gets the recorded decision on the same tool call (tool and arguments). A question
gets the recorded answer to a question of the same turn: the one with the same words, else
the first one the same agent asked. A question or approval the record has no answer for is
answered from the answers file when a rule there matches; otherwise the conversation stops
there, and the report says so.

The answers file is JSON, a list of rules tried in order:

    [{"question": "order number", "answer": "Order 4711"},
     {"tool": "execute_refund", "approve": false, "answer": "not during a replay"}]

`question` matches a question whose text contains it (ignoring case); `tool` matches an
approval of that tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from durable_teams.replay.records import Asked, Record, canonical_arguments


@dataclass(frozen=True)
class AnswerRule:
    question: str | None = None
    tool: str | None = None
    answer: str = ""
    approve: bool | None = None

    def matches(self, question: dict[str, Any]) -> bool:
        if question.get("kind") == "approval":
            return self.tool is not None and self.tool == question.get("tool")
        return self.question is not None and self.question.casefold() in str(question.get("text", "")).casefold()


def load_answers(path: str | Path) -> list[AnswerRule]:
    """The rules in an answers file; one that cannot be read says why (ValueError)."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"answers file {path}: {err}".splitlines()[0]) from None
    if not isinstance(data, list):
        raise ValueError(f"answers file {path}: a JSON list of rules, not a {type(data).__name__}")
    rules = []
    for n, item in enumerate(data, 1):
        if not isinstance(item, dict) or not ({"question", "tool"} & set(item)) or \
                set(item) - {"question", "tool", "answer", "approve"}:
            raise ValueError(f"answers file {path}: rule {n} needs \"question\" or \"tool\" (and \"answer\" "
                             "or \"approve\"), nothing else")
        if item.get("tool") is not None and not isinstance(item.get("approve"), bool):
            raise ValueError(f"answers file {path}: rule {n} (tool {item['tool']!r}) needs \"approve\": true or false")
        rules.append(AnswerRule(item.get("question"), item.get("tool"), str(item.get("answer", "")),
                                item.get("approve")))
    return rules


@dataclass(frozen=True)
class Answer:
    text: str
    approved: bool | None
    by: str
    """"record" or "answers file"."""


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class QuestionBook:
    record: Record
    rules: list[AnswerRule] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.unused: list[Asked] = [a for a in self.record.asked if a.answer is not None or a.approved is not None]

    def answer_for(self, question: dict[str, Any], turn: int) -> Answer | None:
        """The answer to the candidate's `question` (a `Question` as JSON) asked in `turn`."""
        recorded = self._recorded(question, turn)
        if recorded is not None:
            self.unused.remove(recorded)
            return Answer(recorded.answer or "", recorded.approved, "record")
        rule = next((r for r in self.rules if r.matches(question)), None)
        if rule is not None:
            return Answer(rule.answer, rule.approve, "answers file")
        return None

    def _recorded(self, question: dict[str, Any], turn: int) -> Asked | None:
        if question.get("kind") == "approval":
            key = (question.get("tool"), canonical_arguments(question.get("arguments")))
            return next((a for a in self.unused if a.question == "approval"
                         and (a.tool, canonical_arguments(a.arguments)) == key), None)
        same_turn = [a for a in self.unused if a.question == "question" and a.turn == turn]
        words = _words(str(question.get("text", "")))
        return next((a for a in same_turn if _words(a.text) == words), None) or next(
            (a for a in same_turn if a.agent == question.get("agent")), None)
