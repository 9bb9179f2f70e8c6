"""Reading an approval from what a person types, strictly: only a plain, unconditional yes
("Yes.", "yes please", "OK, go ahead", "approved", "👍") approves, a plain no ("no thanks",
"don't", "no way") denies, and anything else (conditional, questioning, hesitant, mixed, about
something else) is neither: the caller asks again, and never takes it as a yes or a no.

A whole answer must be made of known phrases (a whitelist, never a search for a yes word):
"yes if it is under $20" has an unknown word, so it is neither. The phrases and the answers
they give are shown in docs/people-in-the-loop.md, from tests/data/approval_phrases.tsv.

Pure: the one reader of free-text approvals, used by the OpenAI-compatible endpoint (the next
chat message answers an approval), the native answer endpoint (`{"text": "yes"}`) and
`durable-teams chat`.
"""

from __future__ import annotations

import re
import unicodedata

YES, NO, NEG, ADV, FILL, UNCLEAR = "yes", "no", "neg", "adv", "fill", "unclear"

LANGUAGES = ("English", "French", "Spanish", "German", "Italian", "Portuguese", "Dutch",
             "Swedish, Norwegian, Danish", "Polish", "Russian", "Japanese", "Chinese")
"""Whose plain yes and no are read (with their polite words: "oui merci", "nein danke")."""

_PHRASES: dict[str, tuple[str, ...]] = {
    YES: (
        "y", "yes", "yeah", "yea", "yep", "yup", "ya", "yes yes", "ok", "okay", "okey", "k", "kk",
        "alright", "all right", "sure", "sure thing", "approve", "approved", "i approve",
        "approve it", "approve that", "confirm", "confirmed", "i confirm", "confirm it",
        "proceed", "go ahead", "go", "go for it", "do it", "do", "please do", "do so", "do that",
        "do this", "approve this", "i approve this", "i approve that", "confirm that", "run that",
        "run it", "ship it", "affirmative", "accept", "accepted", "agreed", "agree", "i agree",
        "allow", "allowed", "allow it", "granted", "fine", "that's fine", "thats fine",
        "fine by me", "sounds good", "looks good", "lgtm", "sgtm", "yes sir", "yes ma'am",
        "you may", "you can", "i do", "i'm sure", "im sure", "let's do it", "lets do it",
        "let's go", "lets go", "yes do it", "go on",
        # French
        "oui", "d'accord", "dac", "vas y", "allez y", "bien sûr", "volontiers", "entendu",
        # Spanish
        "sí", "si", "claro", "claro que sí", "claro que si", "vale", "de acuerdo", "adelante",
        # German, Dutch, Nordic
        "ja", "jawohl", "genau", "einverstanden", "klar", "alles klar", "mach es", "mach das",
        "prima", "ja tak",
        # Italian, Portuguese
        "sì", "va bene", "procedi", "sim", "pode", "pode sim",
        # Polish, Russian
        "tak", "да", "конечно да",
        # Japanese, Chinese
        "はい", "ええ", "了解", "是", "是的", "好", "好的", "可以", "行", "同意",
    ),
    ADV: (
        "absolutely", "definitely", "certainly", "of course", "sure", "indeed",
        "absolument", "certainement", "natürlich", "naturlich", "certo", "конечно",
    ),
    NO: (
        "n", "no", "nope", "nah", "naw", "no no", "no way", "hell no", "deny", "denied",
        "i deny", "reject", "rejected", "i reject", "decline", "declined", "i decline", "cancel",
        "cancel it", "cancel that", "stop", "stop it", "abort", "refuse", "refused", "i refuse",
        "negative", "disallow", "disallowed", "no thanks", "no thank you", "nope nope",
        "by no means", "no chance",
        "non", "pas question", "nein", "auf keinen fall", "nee", "nej", "nei", "nej tak",
        "para nada", "claro que no", "não", "nao", "nie", "нет", "не надо", "いいえ", "いや",
        "不", "不要", "不行", "不可以", "不同意", "拒绝",
    ),
    NEG: ("not", "never", "don't", "dont", "do not", "do'nt", "please don't", "please do not", "i don't",
          "i do not", "let's not", "lets not", "pas", "nicht", "не"),
    FILL: (
        "please", "pls", "plz", "just", "thanks", "thank you", "thx", "ty", "then", "now", "sir", "ma'am",
        "dear", "so", "merci", "s'il vous plaît", "s'il te plaît", "svp", "por favor", "gracias",
        "bitte", "danke", "grazie", "per favore", "obrigado", "obrigada", "graag", "alsjeblieft",
        "пожалуйста", "спасибо", "お願いします", "ください", "谢谢", "请",
    ),
    UNCLEAR: ("not sure", "not yet", "not now", "i'm not sure", "im not sure", "not really",
              "yes and no", "no idea", "i don't know", "i dont know", "dunno", "ok wait"),
}

PHRASES: dict[tuple[str, ...], str] = {}
for _kind, _phrases in _PHRASES.items():
    for _phrase in _phrases:
        PHRASES.setdefault(tuple(_phrase.split()), _kind)  # "sure": a yes first (an adverb too)
ADVERBS = frozenset(tuple(p.split()) for p in _PHRASES[ADV])
LONGEST = max(len(p) for p in PHRASES)

EMOJI = {
    "👍": "yes", "✅": "yes", "✔": "yes", "☑": "yes", "👌": "yes", "🆗": "yes", "🙆": "yes",
    "👎": "no", "❌": "no", "✖": "no", "🚫": "no", "⛔": "no", "🙅": "no", "❎": "no",
    "🙏": "please", "🙂": "please", "😊": "please", "😀": "please", "😃": "please", "😄": "please",
}
"""Emoji read as words (skin tones and the emoji variation selector are dropped first)."""
IGNORED = re.compile("[\ufe0f\ufe0e\u200d\U0001f3fb-\U0001f3ff]")
QUESTIONING = re.compile(r"[?¿]|\.\.\.|…")
"""A question mark, or a trailing off ("ok...", "ok…"): neither."""
CLAUSES = re.compile(r"[.,;!:()\"«»“”\n\r\t、。，！]+")
WORD = re.compile(r"[\w']+")
AND = re.compile(r"\band\b")
PUNCTUATION_OK = re.compile(r"[\w\s'\-.,;!:()\"«»“”、。，！]*")


def approval_of(text: str) -> bool | None:
    """True for a plain yes, False for a plain no, None for anything else (ask again)."""
    clauses = normalised(text)
    if clauses is None:
        return None
    said: set[str] = set()
    for clause in clauses:
        kind = clause_kind(clause)
        if kind == UNCLEAR:
            return None
        if kind is not None:
            said.add(kind)
    return said == {YES} if len(said) == 1 else None


def normalised(text: str) -> list[list[str]] | None:
    """The answer's clauses, each a list of lower-case words; None when it asks, trails off
    or holds a sign that is not a word or punctuation ("$20", "🤔")."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'").replace("\u02bc", "'")
    text = IGNORED.sub("", text)
    for emoji, word in EMOJI.items():
        text = text.replace(emoji, f", {word},")
    if QUESTIONING.search(text) or not PUNCTUATION_OK.fullmatch(text):
        return None
    text = AND.sub(",", text.replace("-", " "))  # "go ahead and do it": two clauses, each read
    return [words for part in CLAUSES.split(text) if (words := [w.strip("'") for w in WORD.findall(part)])]


def clause_kind(words: list[str]) -> str | None:
    """YES, NO, UNCLEAR, or None for a clause of polite words only ("thanks")."""
    items: list[tuple[str, tuple[str, ...]]] = []
    at = 0
    while at < len(words):
        for size in range(min(LONGEST, len(words) - at), 0, -1):
            phrase = tuple(words[at:at + size])
            if phrase in PHRASES:
                items.append((PHRASES[phrase], phrase))
                at += size
                break
        else:
            return UNCLEAR  # a word we do not know: about something else, or a condition
    kinds = [kind for kind, _ in items if kind != FILL]
    phrases = [phrase for kind, phrase in items if kind != FILL]
    said: set[str] = set()
    i = 0
    while i < len(kinds):
        kind, following = kinds[i], kinds[i + 1] if i + 1 < len(kinds) else None
        if kind == UNCLEAR:
            return UNCLEAR
        if kind == NEG:  # "not", "don't", "don't do it", "not approved"
            if following in (YES, ADV):
                i += 1
            elif following is not None:  # "not no", "don't not": never guessed
                return UNCLEAR
            said.add(NO)
        elif (kind == ADV or phrases[i] in ADVERBS) and following == NEG:  # "absolutely not"
            said.add(NO)
            i += 1
        elif kind in (YES, ADV):
            if following == NEG:  # "ok don't", "yes not"
                return UNCLEAR
            said.add(YES)
        else:
            said.add(NO)
        i += 1
    if len(said) > 1:
        return UNCLEAR
    return said.pop() if said else None


ASK_AGAIN = "Please answer yes or no: may "
"""How `ask_again` begins: a chat client resends it, and the gateway knows it for its own."""


def ask_again(tool: str) -> str:
    """What a person reads when their answer to an approval was not a plain yes or no."""
    return f"{ASK_AGAIN}{tool} run?"
