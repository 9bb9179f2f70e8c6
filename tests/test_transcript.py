"""Pure tests of the transcript views and handoff conventions (no Temporal)."""

from __future__ import annotations

import json

import pytest

from durable_teams.activities.wire import message_dict
from durable_teams.workflows.handoff import (
    handoff_back_messages,
    handoff_message,
    handoff_tool_name,
    handoff_tool_spec,
)
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.transcript import Transcript

pytestmark = pytest.mark.pure


def ai(name: str, content: str = "", calls: list[ToolCall] | None = None, agent_run: int = 0) -> Message:
    return Message(role="assistant", name=name, content=content, tool_calls=calls or [], agent_run=agent_run)


def tool(call: ToolCall, content: str, agent_run: int = 0) -> Message:
    return Message(role="tool", name=call.name, content=content, tool_call_id=call.id, agent_run=agent_run)


def supervised_run(output_mode: str, *, back: bool = True) -> Transcript:
    """human -> supervisor hands to math -> math calls add, answers -> back to supervisor."""
    t = Transcript()
    t.append(Message(role="user", content="what is 1+2?"))
    handoff = ToolCall(id="c1", name="transfer_to_math_expert")
    t.append(ai("supervisor", calls=[handoff]))
    t.append(handoff_message("math_expert", handoff))
    run = t.start_run("math_expert", handoff.id)
    add = ToolCall(id="c2", name="add", arguments='{"a": 1, "b": 2}')
    t.append(ai("math_expert", calls=[add], agent_run=run.id))
    t.append(tool(add, "3.0", agent_run=run.id))
    t.append(ai("math_expert", "1+2 is 3.", agent_run=run.id))
    t.finish_run(run.id, output_mode)  # type: ignore[arg-type]
    if back:
        for m in handoff_back_messages("math_expert", "supervisor", "back_1"):
            t.append(m)
    t.append(ai("supervisor", "The answer is 3."))
    return t


def shape(messages: list[Message]) -> list[tuple[str, str | None, str | None]]:
    return [(m.role, m.name, m.content) for m in messages]


def test_handoff_tool_names_and_texts_follow_langgraph_supervisor() -> None:
    assert handoff_tool_name("Research Expert") == "transfer_to_research_expert"
    # langgraph's README promises delegate_to_<name> but builds delegate_to<name>; we add the _.
    assert handoff_tool_name("math", "delegate_to") == "delegate_to_math"
    spec = handoff_tool_spec("math_expert")
    assert spec.description == "Ask agent 'math_expert' for help"
    assert spec.parameters == {"type": "object", "properties": {}}
    call = ToolCall(id="x", name="transfer_to_math_expert")
    assert handoff_message("math_expert", call).content == "Successfully transferred to math_expert"
    back_ai, back_tool = handoff_back_messages("math_expert", "supervisor", "b1")
    assert back_ai.content == "Transferring back to supervisor"
    assert back_ai.name == "math_expert"
    assert back_ai.tool_calls[0].name == "transfer_back_to_supervisor"
    assert back_tool.content == "Successfully transferred back to supervisor"
    assert back_tool.tool_call_id == back_ai.tool_calls[0].id


def test_last_message_mode_keeps_only_the_workers_answer() -> None:
    t = supervised_run("last_message")
    assert shape(t.view(0)) == [
        ("user", None, "what is 1+2?"),
        ("assistant", "supervisor", ""),
        ("tool", "transfer_to_math_expert", "Successfully transferred to math_expert"),
        ("assistant", "math_expert", "1+2 is 3."),
        ("assistant", "math_expert", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "supervisor", "The answer is 3."),
    ]
    assert len(t.log) == 9  # the worker's tool loop is still in the log, for audit


def test_full_history_mode_keeps_the_workers_tool_loop() -> None:
    t = supervised_run("full_history")
    assert [m.content for m in t.view(0)][3:6] == ["", "3.0", "1+2 is 3."]
    assert len(t.view(0)) == 9


def test_worker_view_is_the_conversation_at_handoff_plus_its_own_messages() -> None:
    t = supervised_run("last_message")
    assert shape(t.view(1)) == [
        ("user", None, "what is 1+2?"),
        ("assistant", "supervisor", ""),
        ("tool", "transfer_to_math_expert", "Successfully transferred to math_expert"),
        ("assistant", "math_expert", ""),
        ("tool", "add", "3.0"),
        ("assistant", "math_expert", "1+2 is 3."),
    ]
    # A view read at an earlier length is what a retried model call scheduled then sees.
    assert [m.content for m in t.view(1, upto=4)][-1] == ""  # before the add result existed
    assert len(t.view(1, upto=4)) == 4


def test_second_worker_is_not_shown_handoff_calls_it_cannot_make() -> None:
    t = supervised_run("last_message")
    second = ToolCall(id="c9", name="transfer_to_research_expert")
    t.append(ai("supervisor", calls=[second]))
    t.append(handoff_message("research_expert", second))
    run = t.start_run("research_expert", second.id)
    seen = t.view(run.id)
    calls = [c.name for m in seen for c in m.tool_calls]
    # Only its own inbound handoff: no transfer_back_to_supervisor, no transfer_to_math_expert.
    assert calls == ["transfer_to_research_expert"]
    assert all(m.tool_call_id in (None, "c9") for m in seen if m.role == "tool")
    assert "1+2 is 3." in [m.content for m in seen]


def test_all_handoffs_view_shows_earlier_handoffs_as_langgraph_supervisor_does() -> None:
    t = supervised_run("last_message")
    second = ToolCall(id="c9", name="transfer_to_research_expert")
    t.append(ai("supervisor", calls=[second]))
    t.append(handoff_message("research_expert", second))
    run = t.start_run("research_expert", second.id)
    seen = t.view(run.id, handoffs="all")
    assert [c.name for m in seen for c in m.tool_calls] == [
        "transfer_to_math_expert", "transfer_back_to_supervisor", "transfer_to_research_expert"]
    assert seen == t.view(0)  # the shared conversation as it was when the worker was engaged


def test_all_handoffs_view_still_filters_a_parallel_handoff_to_the_workers_call() -> None:
    t = Transcript()
    t.append(Message(role="user", content="two things"))
    a, b = ToolCall(id="a", name="transfer_to_x"), ToolCall(id="b", name="transfer_to_y")
    t.append(ai("supervisor", calls=[a, b]))
    t.append(handoff_message("x", a))
    t.append(handoff_message("y", b))
    rx = t.start_run("x", "a")
    view_x = t.view(rx.id, handoffs="all")
    assert [c.id for m in view_x for c in m.tool_calls] == ["a"]
    assert [m.tool_call_id for m in view_x if m.role == "tool"] == ["a"]


def test_parallel_handoff_worker_sees_the_supervisor_message_filtered_to_its_call() -> None:
    t = Transcript()
    t.append(Message(role="user", content="two things"))
    a, b = ToolCall(id="a", name="transfer_to_x"), ToolCall(id="b", name="transfer_to_y")
    t.append(ai("supervisor", calls=[a, b]))
    t.append(handoff_message("x", a))
    t.append(handoff_message("y", b))
    rx, ry = t.start_run("x", "a"), t.start_run("y", "b")
    t.append(ai("y", "y done", agent_run=ry.id))
    t.append(ai("x", "x done", agent_run=rx.id))
    view_x = t.view(rx.id)
    assert [c.id for m in view_x for c in m.tool_calls] == ["a"]
    assert [m.content for m in view_x][-1] == "x done"
    assert "y done" not in [m.content for m in view_x]
    # Folding back in call order, whatever order they finished in.
    t.finish_run(rx.id, "last_message")
    t.finish_run(ry.id, "last_message")
    assert [m.content for m in t.view(0)][-2:] == ["x done", "y done"]


def test_hidden_handoff_messages_leave_no_dangling_calls() -> None:
    t = supervised_run("last_message")
    shown = t.view(0, handoffs="none")
    assert [m.content for m in shown] == ["what is 1+2?", "1+2 is 3.", "The answer is 3."]
    assert shape(t.view(1, handoffs="none"))[0:2] == [
        ("user", None, "what is 1+2?"),
        ("assistant", "math_expert", ""),
    ]


def test_openai_shape_drops_bookkeeping() -> None:
    call = ToolCall(id="c", name="add", arguments='{"a":1}')
    m = ai("math_expert", calls=[call], agent_run=3)
    assert message_dict(m) == {
        "role": "assistant",
        "content": "",
        "name": "math_expert",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}}],
    }
    assert message_dict(tool(call, "2")) == {"role": "tool", "content": "2", "tool_call_id": "c"}


def test_agent_run_keeps_its_wire_names() -> None:
    """One name in code (`agent_run`), the names recorded histories hold on the wire."""
    from durable_teams.workflows.messages import ModelRequest
    from durable_teams.workflows.state import TurnProgress

    m = Message(role="assistant", content="x", agent_run=2)
    assert json.loads(m.model_dump_json())["scope"] == 2 and "agent_run" not in m.model_dump()
    assert Message.model_validate_json('{"role": "user", "scope": 3}').agent_run == 3
    assert m.model_copy(update={"agent_run": 0}).agent_run == 0
    assert m.model_copy(update={"scope": 5}).agent_run == 5  # the wire name is understood too
    with pytest.raises(TypeError, match="Message has no field 'scop'"):
        m.model_copy(update={"scop": 1})
    req = ModelRequest(workflow_id="w", run_id="r", agent="a", model="m", agent_run=4, transcript_length=1)
    assert json.loads(req.model_dump_json())["view_id"] == 4
    assert ModelRequest.model_validate_json(req.model_dump_json()) == req
    progress = TurnProgress.model_validate({"turn": 1, "agent": "a", "view_id": 7})
    assert progress.agent_run == 7 and progress.model_dump()["view_id"] == 7
