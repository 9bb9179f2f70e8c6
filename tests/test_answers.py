"""Approvals read strictly, as people type them: a plain yes approves, a plain no denies, and
anything conditional, questioning, hesitant, mixed or about something else is neither (asked
again). The table is tests/data/approval_phrases.tsv, shown in docs/people-in-the-loop.md."""

from __future__ import annotations

import pytest

from durable_teams.client.approvals import approval_of

from .approval_phrases import TAKEN, documented, rows, table

pytestmark = pytest.mark.pure


ROWS = rows()


@pytest.mark.parametrize(("answer", "taken", "kind"), ROWS, ids=[f"{k}:{a!r}" for a, _, k in ROWS])
def test_every_answer_of_the_table_is_taken_as_it_says(answer: str, taken: str, kind: str) -> None:
    assert approval_of(answer) is TAKEN[taken]


def test_the_table_is_large_and_covers_every_kind() -> None:
    assert len(ROWS) >= 500
    assert len({a for a, _, _ in ROWS}) == len(ROWS), "an answer is listed twice"
    kinds = {k for _, _, k in ROWS}
    assert {"conditional", "questioning", "hesitant", "mixed", "negations", "emoji", "other languages"} <= kinds


def test_the_docs_show_the_same_table() -> None:
    assert documented() == table(), "run: python tests/approval_phrases.py"


@pytest.mark.parametrize("answer", ["Yes if it is under $20", "ok, why?", "ok wait", "right?", "correct?",
                                    "ok?", "ok, but...", "hmm, what will that do to my account?"])
def test_the_answers_the_issue_found_approving_do_not(answer: str) -> None:
    assert approval_of(answer) is None


@pytest.mark.parametrize("decorate", [str.upper, str.title, lambda a: a + ".", lambda a: a + "!",
                                      lambda a: f"  {a} ", lambda a: a + " 👍" if approval_of(a) else a + " 👎"])
def test_case_and_punctuation_change_no_plain_answer(decorate) -> None:  # type: ignore[no-untyped-def]
    for answer, taken, kind in ROWS:
        if taken != "ask again" and kind != "other languages" and answer.isascii():
            assert approval_of(decorate(answer)) is TAKEN[taken], decorate(answer)


@pytest.mark.parametrize("tail", [" if it is cheap", " but only today", "?", "...", " wait", ", why?",
                                  " unless it costs more", " $5", " 🤔", " maybe"])
def test_a_condition_question_or_doubt_after_any_plain_answer_makes_it_unclear(tail: str) -> None:
    for answer, taken, _ in ROWS:
        if taken != "ask again" and answer.strip():
            assert approval_of(answer.strip() + tail) is None, answer + tail
