"""Views built incrementally (workflows/agent_views.py) equal `Transcript.view` rebuilt from
scratch: after every append and fold, for every agent run and handoff view, for reads retried
at an older length, and for a new run after continue-as-new."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from durable_teams.workflows.agent_views import ViewBuilder
from durable_teams.workflows.handoff import HandoffView, handoff_back_messages, handoff_message
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.transcript import Transcript

pytestmark = pytest.mark.pure

MODES: list[HandoffView] = ["own", "all", "none"]


def ai(name: str, content: str = "", calls: list[ToolCall] | None = None, agent_run: int = 0) -> Message:
    return Message(role="assistant", name=name, content=content, tool_calls=calls or [], agent_run=agent_run)


def tool(call: ToolCall, content: str, agent_run: int = 0) -> Message:
    return Message(role="tool", name=call.name, content=content, tool_call_id=call.id, agent_run=agent_run)


def growing(t: Transcript, output_mode: str) -> Iterator[None]:
    """Grows `t` (the same object) step by step: a user turn, a notice, parallel handoffs to two
    runs, tool loops, the runs folded back in the opposite order (so `shared` is not sorted), a
    routing record, a second turn, a third run."""
    t.append(Message(role="user", content="what is 1+2 and 3+4?"))
    yield
    t.append(Message(role="user", content="refused signal", kind="notice"))
    h1, h2 = ToolCall(id="h1", name="transfer_to_math"), ToolCall(id="h2", name="transfer_to_math")
    t.append(ai("supervisor", calls=[h1, h2]))
    t.append(handoff_message("math", h1))
    t.append(handoff_message("math", h2))
    runs = [t.start_run("math", h1.id), t.start_run("math", h2.id)]
    yield
    for step in range(3):
        for run in runs:
            add = ToolCall(id=f"a{run.id}{step}", name="add", arguments='{"a": 1}')
            t.append(ai("math", calls=[add], agent_run=run.id))
            yield
            t.append(tool(add, f"{run.id}.{step}", agent_run=run.id))
            yield
    for run in runs:
        t.append(ai("math", f"answer {run.id}", agent_run=run.id))
    for run in reversed(runs):
        t.finish_run(run.id, output_mode)  # type: ignore[arg-type]
        for m in handoff_back_messages("math", "supervisor", f"back_{run.id}"):
            t.append(m)
        yield
    t.append(Message(role="assistant", name="supervisor", content="route: math", kind="routing"))
    t.append(ai("supervisor", "3 and 7"))
    t.append(Message(role="user", content="and 5+5?"))
    yield
    h3 = ToolCall(id="h3", name="transfer_to_math")
    t.append(ai("supervisor", calls=[h3]))
    t.append(handoff_message("math", h3))
    third = t.start_run("math", h3.id)
    yield
    t.append(ai("math", "10", agent_run=third.id))
    yield


def expected(t: Transcript, agent_run: int, upto: int, shared: int, handoffs: HandoffView) -> list[Message]:
    return Transcript.of(list(t.log[:upto]), list(t.shared[:shared]), dict(t.runs)).view(
        agent_run, upto, handoffs=handoffs)


@pytest.mark.parametrize("output_mode", ["last_message", "full_history"])
@pytest.mark.parametrize("handoffs", MODES)
def test_incremental_views_equal_full_rebuilds_after_every_change(output_mode: str, handoffs: HandoffView) -> None:
    t, builder, checked = Transcript(), ViewBuilder(), 0
    for _ in growing(t, output_mode):
        for agent_run in [0, *t.runs]:
            # as scheduled now, and a little earlier (a run folded in since: shared entries
            # at or past the read's length)
            for upto, shared in [(len(t.log) - 2, len(t.shared)), (len(t.log), len(t.shared))]:
                if upto < 1:
                    continue
                got = builder.view(t, agent_run, upto, shared, handoffs)
                assert got == expected(t, agent_run, upto, shared, handoffs)
                checked += 1
    assert checked > 50


@pytest.mark.parametrize("handoffs", MODES)
def test_a_retry_reads_the_older_view_and_later_reads_still_extend(handoffs: HandoffView) -> None:
    t, builder = Transcript(), ViewBuilder()
    points: list[tuple[int, int]] = []
    for _ in growing(t, "full_history"):
        points.append((len(t.log), len(t.shared)))
        for agent_run in [0, *t.runs]:
            builder.view(t, agent_run, len(t.log), len(t.shared), handoffs)
            for upto, shared in points[-3:]:  # retried calls scheduled earlier
                if agent_run in t.runs and t.runs[agent_run].shared_start > shared:
                    continue  # that run did not exist yet
                got = builder.view(t, agent_run, upto, shared, handoffs)
                assert got == expected(t, agent_run, upto, shared, handoffs)
            assert builder.view(t, agent_run, len(t.log), len(t.shared), handoffs) == expected(
                t, agent_run, len(t.log), len(t.shared), handoffs)


def test_after_continue_as_new_a_new_run_builds_from_its_carried_transcript() -> None:
    t, old = Transcript(), ViewBuilder()
    steps = growing(t, "last_message")
    for _ in range(6):
        next(steps)
        old.view(t, 0, len(t.log), len(t.shared))
    # continue-as-new: the state travels as workflow input; the next run decodes new objects
    carried = Transcript.model_validate_json(t.model_dump_json())
    fresh = ViewBuilder()
    for run in [0, *carried.runs]:
        assert fresh.view(carried, run, len(carried.log), len(carried.shared)) == t.view(run)
    carried.append(Message(role="user", content="after the new run began"))
    assert fresh.view(carried, 0, len(carried.log), len(carried.shared)) == carried.view(0)


def test_views_are_fresh_lists_and_few_cursors_are_kept() -> None:
    t, builder = Transcript(), ViewBuilder(max_cursors=2)
    for _ in growing(t, "full_history"):
        for agent_run in [0, *t.runs]:
            first = builder.view(t, agent_run, len(t.log), len(t.shared))
            first.append(Message(role="user", content="changed by a caller"))
            assert builder.view(t, agent_run, len(t.log), len(t.shared)) == t.view(agent_run)
    assert len(builder._cursors) == 2


def test_an_unknown_run_is_a_key_error_as_in_the_transcript() -> None:
    t = Transcript()
    t.append(Message(role="user", content="q"))
    with pytest.raises(KeyError):
        ViewBuilder().view(t, 5, 1, 1)
