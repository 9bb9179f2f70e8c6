"""The table of approval answers (tests/data/approval_phrases.tsv): read by tests/test_answers.py,
and shown in docs/people-in-the-loop.md between the markers below. After editing the data,
`python tests/approval_phrases.py` rewrites the docs' table (a test fails while they differ)."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data" / "approval_phrases.tsv"
DOC = Path(__file__).parent.parent / "docs" / "people-in-the-loop.md"
START, END = "<!-- approval-phrases:start -->", "<!-- approval-phrases:end -->"
TAKEN = {"yes": True, "no": False, "ask again": None}


def rows() -> list[tuple[str, str, str]]:
    """(answer, taken as, class) for every line of the data file."""
    found = []
    for line in DATA.read_text("utf-8").splitlines():
        if line.startswith("#") or not line.strip("\n"):
            continue
        answer, taken, kind = line.split("\t")
        if "\\" in answer:  # a newline or an invisible character, written escaped
            answer = answer.encode().decode("unicode_escape")
        found.append((answer, taken, kind))
    return found


def shown(answer: str) -> str:
    odd = not answer.strip() or answer != answer.strip() or not answer.isprintable()
    return "`" + (json.dumps(answer, ensure_ascii=False) if odd else answer).replace("|", "\\|") + "`"


def table() -> str:
    """The docs' table: one row per kind of answer, every answer of the data in it."""
    groups: dict[tuple[str, str], list[str]] = {}
    for answer, taken, kind in rows():
        groups.setdefault((taken, kind), []).append(shown(answer))
    lines = ["| Taken as | Kind of answer | Answers |", "|---|---|---|"]
    lines += [f"| {taken} | {kind} | {' · '.join(answers)} |" for (taken, kind), answers in groups.items()]
    return "\n".join(lines)


def documented() -> str:
    text = DOC.read_text("utf-8")
    return text[text.index(START) + len(START):text.index(END)].strip()


if __name__ == "__main__":
    text = DOC.read_text("utf-8")
    DOC.write_text(text[:text.index(START) + len(START)] + "\n" + table() + "\n" + text[text.index(END):], "utf-8")
