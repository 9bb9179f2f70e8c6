"""Ids derived from ids (forks, forks of forks) stay within the thread id rule: deterministic,
distinct for distinct bases, and unchanged when they fit. Pure."""

from __future__ import annotations

import pytest

from durable_teams.client.thread_ids import MAX_THREAD_ID_CHARS, derived_id
from durable_teams.gateway.core.requests import THREAD_ID

pytestmark = pytest.mark.pure


def test_an_id_that_fits_is_the_base_and_the_suffix() -> None:
    assert derived_id("support-1", "-fork-ab12") == "support-1-fork-ab12"


def test_forks_of_forks_of_the_longest_id_stay_valid_and_distinct() -> None:
    base = "a" * MAX_THREAD_ID_CHARS
    chain = [base]
    for n in range(10):
        chain.append(derived_id(chain[-1], f"-fork-{n:08x}"))
    assert all(THREAD_ID.fullmatch(made) for made in chain)
    assert len(set(chain)) == len(chain)
    assert derived_id(chain[3], "-fork-00000003") == chain[4]  # the same base: the same id
    # two long bases differing only past the cut still give two ids
    assert derived_id(base + "b", "-fork-1") != derived_id(base + "c", "-fork-1")


def test_ids_made_for_a_team_of_any_name_stay_valid() -> None:
    from durable_teams.client.thread_ids import MAX_TEAM_PART_CHARS, team_part
    from durable_teams.gateway.core.resent_history import ChatHistory, ChatKey, new_thread_id
    from durable_teams.gateway.doors.responses.forks import fork_thread_id
    from durable_teams.gateway.doors.responses.from_log import ResponseRef

    assert team_part("support") == "support"  # every team of a usual name: ids as before
    long, longer = "t" * 500, "t" * 499 + "u"
    assert len(team_part(long)) == MAX_TEAM_PART_CHARS and team_part(long) != team_part(longer)
    made = [
        new_thread_id(ChatKey("", long, "", None), ChatHistory(earlier=[], text="hello")),
        fork_thread_id(long, ResponseRef("x", 1, 0), "scope", "request"),
    ]
    assert all(THREAD_ID.fullmatch(thread) for thread in made), made
