"""Wire types: strict where a person writes them, tolerant where another version wrote them."""

from __future__ import annotations

import pydantic
import pytest

from durable_teams.workflows.messages import ModelResponse, TeamSpec, ToolResult
from durable_teams.workflows.state import (
    ConversationInput,
    ConversationResult,
    ConversationStatus,
    TurnReply,
    UserTurn,
)


def test_what_a_newer_worker_returns_is_read_by_an_older_client() -> None:
    """A field added in a later version (here `mood`) is ignored, and known fields still read."""
    result = ConversationResult.model_validate_json(
        '{"answer": "4", "agent": "maths", "status": "completed", "turns": 1, "model_calls": 2, "mood": "ok"}')
    assert (result.answer, result.model_calls) == ("4", 2)
    reply = TurnReply.model_validate({"turn": 3, "text": "hi", "agent": "a", "mood": "ok"})
    assert reply.turn == 3
    status = ConversationStatus.model_validate({
        "active_agent": None, "turns": 0, "model_calls": 0, "pending": [], "queued_turns": 0,
        "last_reply": None, "closed": False, "mood": "ok"})
    assert status.turns == 0
    # Activity results read by the workflow: a newer activity worker must not fail the workflow
    # task (which Temporal would retry forever).
    assert ModelResponse.model_validate({"message": {"role": "assistant", "content": "x"}, "mood": 1}).message.content == "x"
    assert ToolResult.model_validate({"content": "5", "mood": 1}).content == "5"


@pytest.mark.parametrize("model, data", [
    (UserTurn, {"text": "hi", "turnid": "t1"}),
    (ConversationInput, {"team_name": "faang", "tsak": "what is 2+2?"}),
    (TeamSpec, {"name": "t", "agents": {}, "budget": {}}),
])
def test_what_a_person_writes_is_refused_with_the_misspelled_field_named(model: type, data: dict) -> None:
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted|Unexpected keyword argument"):
        pydantic.TypeAdapter(model).validate_python(data)
