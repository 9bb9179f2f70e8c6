"""ABI's intents: phrases mapped to a fixed answer, a tool call, or an agent, matched against
the person's message before any model call. Pure (no Temporal): the data, the matching, the
transcript record. The turn that acts on a match is workflows/intent_turns.py.

    Supervisor([billing, support], intents=[
        Intent(phrases=["opening hours", "when are you open"], answer="We are open 9 to 5."),
        Intent(phrases=["refund my order"], agent="billing"),
        Intent(phrases=["order status"], tool="order_status", arguments={"verbose": False}),
    ])

Matching is exact after normalizing both sides (NFKC, so fullwidth and other compatibility
forms read as their plain letters; case folded, punctuation and runs of whitespace dropped,
accents kept): "When are you OPEN?!" and "ｗｈｅｎ ａｒｅ ｙｏｕ ｏｐｅｎ" match "when are you open". With
`intent_similarity` set on the team, a message no phrase matches exactly is compared by
embeddings (cosine similarity, at least its `threshold`); the embedding call is an activity,
the comparison happens here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Intent(BaseModel):
    """Phrases a person may say, and what happens then, instead of a model call: exactly one
    of `answer` (said as is), `tool` (called with `arguments`; its result is the answer), or
    `agent` (the turn goes to that agent, as `@agent` would send it)."""

    model_config = ConfigDict(extra="forbid")  # as every wire type (messages.Wire)

    phrases: list[str] = Field(min_length=1)
    answer: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    agent: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Intent:
        targets = [k for k in ("answer", "tool", "agent") if getattr(self, k) is not None]
        if len(targets) != 1:
            raise ValueError(f"an intent has exactly one of answer, tool or agent; got "
                             f"{', '.join(targets) or 'none'} (phrases {self.phrases})")
        if self.arguments and self.tool is None:
            raise ValueError("an intent's arguments go with a tool")
        if not any(normalize(p) for p in self.phrases):
            raise ValueError(f"an intent needs a phrase with words in it; got {self.phrases}")
        return self

    @property
    def action(self) -> str:
        """What the intent does, for people: "answer", "tool <name>" or "agent <name>"."""
        if self.tool is not None:
            return f"tool {self.tool}"
        return f"agent {self.agent}" if self.agent is not None else "answer"


class IntentSimilarity(BaseModel):
    """Match intents by meaning too: phrases and message are embedded by an OpenAI-compatible
    embeddings endpoint (the worker's, `model`), and a message whose cosine similarity to a
    phrase is at least `threshold` matches it (the most similar wins)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "text-embedding-3-small"
    threshold: float = Field(default=0.85, gt=0.0, le=1.0)


_DROP = re.compile(r"[\W_]+", re.UNICODE)


def normalize(text: str, compatibility: bool = True) -> str:
    """NFKC (`compatibility`: fullwidth "ｈｉ" is "hi"), lowercase (casefold), punctuation
    dropped, words joined by single spaces: what exact matching compares. `compatibility`
    False: as conversations recorded before NFKC matched (workflows/intent_turns.py)."""
    if compatibility:
        text = unicodedata.normalize("NFKC", text)
    return " ".join(_DROP.sub(" ", text.casefold()).split())


@dataclass(frozen=True)
class IntentMatch:
    owner: str
    """The agent the intent belongs to (a team's intents: the agent taking the turn)."""
    intent: Intent
    phrase: str
    how: str
    """"exact", or "similarity 0.91"."""


Candidates = Sequence[tuple[str, Intent]]


def match_exact(candidates: Candidates, text: str, compatibility: bool = True) -> IntentMatch | None:
    """The first intent with a phrase equal to `text` once both are normalized (`normalize`)."""
    said = normalize(text, compatibility)
    if not said:
        return None
    for owner, intent in candidates:
        for phrase in intent.phrases:
            if normalize(phrase, compatibility) == said:
                return IntentMatch(owner, intent, phrase, "exact")
    return None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero or they differ in length)."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def phrases_of(candidates: Candidates) -> list[str]:
    """Every phrase of the candidates, in order (what is embedded, after the message)."""
    return [p for _, intent in candidates for p in intent.phrases]


def match_similar(candidates: Candidates, message: Sequence[float],
                  phrases: Sequence[Sequence[float]], threshold: float) -> IntentMatch | None:
    """The intent with the phrase most similar to the message, if at least `threshold`;
    `phrases` are the embeddings of `phrases_of(candidates)`, in that order. Ties: the first."""
    best: tuple[float, str, Intent, str] | None = None
    vectors = iter(phrases)
    for owner, intent in candidates:
        for phrase in intent.phrases:
            score = cosine(message, next(vectors, ()))
            if score >= threshold and (best is None or score > best[0]):
                best = (score, owner, intent, phrase)
    if best is None:
        return None
    return IntentMatch(best[1], best[2], best[3], f"similarity {best[0]:.2f}")


def record_text(match: IntentMatch) -> str:
    """The transcript's record of a match (a "routing" message, so the event stream shows it)."""
    return f"Intent matched ({match.how}): {match.phrase!r} -> {match.intent.action}"
