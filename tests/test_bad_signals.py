"""Malformed updates and signals never wedge a conversation: an update is rejected by its
validator with a reason the caller gets at once; a signal (whose sender gets no answer) is
recorded where the `status` query shows it and noted in the transcript, where no model sees
it. The conversation goes on either way, and no workflow task ever fails."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_teams.client.send import send_turn
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import MAX_TURN_BYTES, TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .inspect_history import raw, task_failures
from .teams import TEAM, echo

pytestmark = pytest.mark.workflow

BIG = "x" * (MAX_TURN_BYTES + 1)

BAD_UPDATES = [
    # (id, update, arguments, error type, what the reason says)
    ("misspelled-field", "submit_turn", [{"txt": "hi"}], "InvalidInput",
     "submit_turn: text: required field missing; txt: unknown field (did you mean 'text'?); "
     "UserTurn has: text, sender, max_tokens, turn_id"),
    ("bare-string", "submit_turn", ["hi"], "InvalidInput",
     "submit_turn: expected a JSON object, one UserTurn (required: text; optional: sender, max_tokens, turn_id, after_turns, interrupt_before, interrupt_after, metadata)"),
    ("no-argument", "submit_turn", [], "InvalidInput", "submit_turn: no value was sent"),
    ("null", "submit_turn", [None], "InvalidInput", "submit_turn: no value was sent"),
    ("two-arguments", "submit_turn", [{"text": "a"}, {"text": "b"}], "InvalidInput",
     "submit_turn: 2 values were sent"),
    ("text-not-a-string", "submit_turn", [{"text": 5}], "InvalidInput",
     "text: input should be a valid string, got 5"),
    ("text-missing", "submit_turn", [{"sender": "ana"}], "InvalidInput", "text: required field missing"),
    ("not-json", "submit_turn", [raw(b"{text: hi}")], "InvalidInput",
     "submit_turn: value 1 could not be decoded as json/plain: Invalid JSON"),
    ("blank-text", "submit_turn", [{"text": "  "}], "TurnRejected", "the message is empty"),
    ("sender-too-long", "submit_turn", [{"text": "hi", "sender": "a" * 300}], "TurnRejected",
     "sender is over 256 characters"),
    ("turn-id-too-long", "submit_turn", [{"text": "hi", "turn_id": "t" * 300}], "TurnRejected",
     "turn_id is over 256 characters"),
    ("oversized-text", "submit_turn", [{"text": BIG}], "TurnRejected",
     f"the message is over {MAX_TURN_BYTES:,} bytes"),
    ("answer-misspelled", "answer", [{"questionid": "q1", "text": "x"}], "InvalidInput",
     "answer: question_id: required field missing; questionid: unknown field (did you mean 'question_id'?)"),
    ("answer-approved-not-boolean", "answer", [{"question_id": "q1", "approved": "perhaps"}],
     "InvalidInput", "approved: input should be a valid boolean"),
    ("answer-no-such-question", "answer", [{"question_id": "q1", "text": "x"}], "AnswerRejected",
     "no pending question 'q1' (pending: none)"),
]


async def start(client: Client, task_queue: str) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=TEAM.spec, single_turn=False),
        id=f"sig-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


@pytest.mark.parametrize(("update", "args", "error_type", "says"), [c[1:] for c in BAD_UPDATES],
                         ids=[c[0] for c in BAD_UPDATES])
async def test_malformed_update_is_rejected_with_a_reason(
    client: Client, task_queue: str, update: str, args: list[Any], error_type: str, says: str
) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await start(client, task_queue)
        with pytest.raises(WorkflowUpdateFailedError) as caught:
            await handle.execute_update(update, args=args)
        after = await send_turn(client, handle.id, "still there?")
        failures = await task_failures(handle)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == error_type
    assert says in cause.message
    assert (after.turn, after.text, failures) == (1, "heard: still there?", 0)


BAD_SIGNALS = [
    # (id, signal, arguments, what `status` records as the reason)
    ("misspelled-field", "post_message", [{"txt": "hi"}],
     "post_message: text: required field missing; txt: unknown field (did you mean 'text'?)"),
    ("bare-string", "post_message", ["hi"], "post_message: expected a JSON object, one UserTurn"),
    ("no-argument", "post_message", [], "post_message: no value was sent"),
    ("two-arguments", "post_message", [{"text": "a"}, {"text": "b"}], "post_message: 2 values were sent"),
    ("text-not-a-string", "post_message", [{"text": ["a"]}], "text: input should be a valid string"),
    ("not-json", "post_message", [raw(b"{text: hi}")],
     "post_message: value 1 could not be decoded as json/plain: Invalid JSON"),
    ("lone-surrogate", "post_message", [raw(b'{"text": "a\\ud800"}')],
     "post_message: value 1 could not be decoded as json/plain: Invalid JSON"),
    ("unknown-encoding", "human_reply", [raw(b"q1", b"text/klingon")],
     "human_reply: value 1 could not be decoded as text/klingon"),
    ("blank-text", "post_message", [{"text": " \n "}], "the message is empty"),
    ("oversized-text", "post_message", [{"text": BIG}], f"the message is over {MAX_TURN_BYTES:,} bytes"),
    ("reply-misspelled", "human_reply", [{"question": "q1", "text": "x"}],
     "human_reply: question_id: required field missing; question: unknown field (did you mean 'question_id'?)"),
    ("reply-bare-string", "human_reply", ["yes"], "human_reply: expected a JSON object, one HumanReply"),
    ("reply-no-such-question", "human_reply", [{"question_id": "q4", "text": "x"}],
     "no pending question 'q4' (pending: none)"),
    ("unknown-signal", "post_mesage", [{"text": "hi"}],
     "no such signal; this workflow takes post_message, human_reply, close"),
]


@pytest.mark.parametrize(("signal", "args", "says"), [c[1:] for c in BAD_SIGNALS],
                         ids=[c[0] for c in BAD_SIGNALS])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_refused_signal_shows_in_status_and_transcript_never_to_a_model(
    client: Client, task_queue: str, signal: str, args: list[Any], says: str
) -> None:
    model = ScriptedModel(echo)
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await start(client, task_queue)
        await handle.signal(signal, args=args)
        after = await send_turn(client, handle.id, "still there?")  # signals are handled first
        status = await handle.query(TeamWorkflow.status)
        transcript = await handle.query(TeamWorkflow.transcript)
        failures = await task_failures(handle)
    (refused,) = status.refused_signals
    assert (refused.signal, status.refused_signal_count) == (signal, 1)
    assert says in refused.reason
    notes = [m for m in transcript if m.kind == "notice"]
    reason = refused.reason.removeprefix(f"{signal}: ")
    assert [(m.role, m.content) for m in notes] == [("system", f"Refused signal {signal}: {reason}"[:500])]
    assert (after.turn, after.text, failures) == (1, "heard: still there?", 0)
    seen = [m.get("content") or "" for _, messages, _ in model.requests for m in messages]
    assert not any("Refused signal" in text for text in seen)


async def test_close_with_an_argument_still_closes_and_says_so(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await start(client, task_queue)
        await send_turn(client, handle.id, "hello")
        await handle.signal("close", "now please")
        result = await handle.result()
        status = await handle.query(TeamWorkflow.status)
    assert (result.answer, result.status) == ("heard: hello", "completed")
    assert [(r.signal, r.reason) for r in status.refused_signals] == [
        ("close", "close takes no arguments; ignored 1 (closing anyway)")]


async def test_a_sender_name_with_spaces_reaches_the_model_without_them(client: Client, task_queue: str) -> None:
    """An endpoint refuses a message `name` with whitespace: the model gets `_` instead, the
    transcript keeps the sender as given."""
    model = ScriptedModel(echo)
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await start(client, task_queue)
        reply = await send_turn(client, handle.id, "hello", sender=" Ana María\tSmith ")
        transcript = await handle.query(TeamWorkflow.transcript)
    ((_, messages, _),) = model.requests
    assert messages[-1] == {"role": "user", "content": "hello", "name": "Ana_María_Smith"}
    assert (transcript[0].name, reply.text) == (" Ana María\tSmith ", "heard: hello")
