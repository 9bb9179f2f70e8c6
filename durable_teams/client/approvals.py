"""Reading an approval from what a person types: "Yes.", "yes please", "OK, go ahead", "no
thanks". Anything unclear is neither: the caller asks again, and never takes it as a denial.

Pure: used by the OpenAI-compatible endpoint (the next chat message answers an approval) and
by `durable-teams chat`.
"""

from __future__ import annotations

import re

YES_WORDS = frozenset({
    "y", "yes", "yeah", "yep", "yup", "sure", "ok", "okay", "k", "approve", "approved",
    "confirm", "confirmed", "proceed", "affirmative", "accept", "allow", "agreed",
})
SOFT_YES = frozenset({"go", "do", "fine", "absolutely", "definitely", "certainly", "correct", "right"})
"""Yes unless negated: "go ahead", but "do not"."""
NO_WORDS = frozenset({
    "n", "no", "nope", "nah", "deny", "denied", "reject", "rejected", "decline", "declined",
    "cancel", "stop", "refuse", "abort", "negative", "disallow",
})
NEGATIONS = frozenset({"not", "don't", "dont", "never", "do'nt"})
FILLER = frozenset({
    "please", "thanks", "thank", "you", "it", "ahead", "that", "this", "of", "course", "then",
    "indeed", "and", "just", "i", "we", "is", "all", "good", "sounds", "looks", "great", "for",
    "now", "the", "refund", "order", "let's", "lets", "run", "thing", "way", "with", "a",
})


def approval_of(text: str) -> bool | None:
    """True for a clear yes, False for a clear no, None when it is neither (or both)."""
    words = re.findall(r"[a-z']+", text.lower().replace("\u2019", "'"))
    if not words:
        return None
    negated = any(w in NEGATIONS for w in words)
    yes = any(w in YES_WORDS for w in words) or (not negated and any(w in SOFT_YES for w in words))
    no = negated or any(w in NO_WORDS for w in words)
    if yes == no:
        return None
    known = YES_WORDS | SOFT_YES | NO_WORDS | NEGATIONS | FILLER
    if sum(w not in known for w in words) > 2:  # about something else: ask again, never guess
        return None
    return yes


def ask_again(tool: str) -> str:
    """What a person reads when their answer to an approval was not a yes or a no."""
    return f"Please answer yes or no: may {tool} run?"
