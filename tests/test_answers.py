"""Approvals read as people type them; anything unclear is neither (asked again)."""

from __future__ import annotations

import pytest

from durable_teams.client.approvals import approval_of

pytestmark = pytest.mark.pure


@pytest.mark.parametrize("text", ["Yes.", "yes please", "Yes, please go ahead.", "OK, go ahead", "approve",
                                  "y", "Sure", "go for it", "Yes, refund the boots", "okay!"])
def test_a_yes_is_a_yes(text: str) -> None:
    assert approval_of(text) is True


@pytest.mark.parametrize("text", ["no thanks", "No.", "deny", "n", "nope", "Do not run it", "Absolutely not",
                                  "Cancel that"])
def test_a_no_is_a_no(text: str) -> None:
    assert approval_of(text) is False


@pytest.mark.parametrize("text", ["", "maybe", "what is this refund for?", "no, go ahead", "Sure, why not",
                                  "I want to talk to a manager about my order first"])
def test_anything_unclear_is_neither(text: str) -> None:
    assert approval_of(text) is None
