"""Wire types: strict where a person writes them, tolerant where another version wrote them."""

from __future__ import annotations

import json

import pydantic
import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import ModelResponse, TeamSpec, ToolResult
from durable_teams.workflows.state import (
    ConversationInput,
    ConversationResult,
    HumanReply,
    TurnReply,
    UserTurn,
)

pytestmark = pytest.mark.pure


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


EARLY_RELEASE_FIELDS = {
    # the fields of each client-sent input in the release of 2026-11-23 (commit 2e9d394)
    ConversationInput: {"team", "team_name", "task", "single_turn", "context", "set_search_attributes",
                        "history", "state"},
    UserTurn: {"text", "sender", "turn_id"},
    HumanReply: {"question_id", "text", "approved"},
}


@pytest.mark.parametrize("sent", [
    ConversationInput(team_name="faang", task="what is 2+2?"),
    ConversationInput(team_name="faang", task="hi", single_turn=False, context={"user": "ann"}),
    UserTurn(text="and 3+3?", turn_id="t-1"),
    HumanReply(question_id="q1", approved=True),
])
def test_a_client_upgraded_before_its_workers_sends_what_they_read(sent: pydantic.BaseModel) -> None:
    """Workers refuse fields they do not know, so what a newer client sends with its newer
    fields unused must hold only fields an early release knows (a rolling upgrade may move the
    gateway or CLI first; before, every conversation it started failed on the older workers)."""
    payload = pydantic_data_converter.payload_converter.to_payloads([sent])[0]
    data = json.loads(payload.data)
    assert set(data) <= EARLY_RELEASE_FIELDS[type(sent)], set(data) - EARLY_RELEASE_FIELDS[type(sent)]
    assert type(sent).model_validate(data) == sent  # and the newer worker reads it back the same
