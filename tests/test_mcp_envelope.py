"""The MCP door's pure parts: the JSON-RPC envelope check in front of the SDK, a task's two
shapes (2026-07-28 extension and 2025-11-25), and the capability a request declares."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_teams.gateway.doors.mcp.rpc import Refusal, checked, good_id
from durable_teams.gateway.doors.mcp.task_wire import (
    TASKS_EXTENSION,
    declares_tasks,
    view_of,
    waiting,
)
from durable_teams.workflows.state import Question
from durable_teams.workflows.turn_states import TurnState

pytestmark = pytest.mark.pure

WHEN = datetime(2026, 7, 28, tzinfo=UTC)


@pytest.mark.parametrize(("body", "code", "answer_id"), [
    (b"{", -32700, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, None),
    (b"3", -32600, None),
    (b'{"id": 1, "method": "ping"}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": false, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": -9007199254740992, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": "", "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": "a\\nb", "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ""}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"}', -32602, 1),
    (b'{"jsonrpc": "2.0", "method": "ping", "params": null}', -32602, None),
    (b'{"jsonrpc": "2.0", "result": {}}', -32600, None),
])
def test_a_message_that_is_not_one_json_rpc_message_is_refused_with_its_code(
        body: bytes, code: int, answer_id: object) -> None:
    with pytest.raises(Refusal) as refused:
        checked(body)
    assert (refused.value.code, refused.value.request_id) == (code, answer_id)


def test_requests_notifications_and_responses_pass() -> None:
    assert checked(b'{"jsonrpc": "2.0", "id": "a-1", "method": "tools/list"}')["id"] == "a-1"
    assert checked(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')["method"]
    assert checked(b'{"jsonrpc": "2.0", "id": 9007199254740991, "result": {}}')["result"] == {}
    assert good_id(0) and good_id("x" * 200) and not good_id("x" * 201) and not good_id(True)


def test_a_task_in_both_forms() -> None:
    asked = Question(question_id="q1", text="Which order?", agent="shop", asked_at=WHEN, timeout_seconds=60)
    waiting_task = view_of("t::1", "t", TurnState("waiting", "[shop] Which order?"), asked, WHEN, WHEN, 500)
    done = view_of("t::2", "t", TurnState("completed", "Refunded."), None, WHEN, WHEN, 500)
    failed_turn = view_of("t::3", "t", TurnState("failed", "the model failed"), None, WHEN, WHEN, 500)
    answered_meanwhile = view_of("t::4", "t", TurnState("waiting", "?"), None, WHEN, WHEN, 500)

    modern = waiting_task.modern()
    assert modern["status"] == "input_required" and modern["ttlMs"] is None and modern["pollIntervalMs"] == 500
    assert modern["inputRequests"]["q1"]["params"]["requestedSchema"]["required"] == ["answer"]
    assert "inputRequests" not in waiting_task.modern(detailed=False)
    assert waiting(waiting_task)["requestState"] == "t::1"
    assert done.modern()["result"]["content"] == [{"type": "text", "text": "Refunded."}]
    assert done.legacy() | {"createdAt": "", "lastUpdatedAt": ""} == {
        "taskId": "t::2", "status": "completed", "statusMessage": "Refunded.", "createdAt": "",
        "lastUpdatedAt": "", "ttl": None, "pollInterval": 500}
    assert failed_turn.modern()["status"] == "completed" and failed_turn.modern()["result"]["isError"]
    assert failed_turn.legacy()["status"] == "failed"
    assert answered_meanwhile.status == "working"


def test_the_extension_is_declared_per_request_in_meta() -> None:
    declared = {"_meta": {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}}
    assert declares_tasks(declared)
    for undeclared in [None, {}, {"_meta": None}, {"_meta": {"io.modelcontextprotocol/clientCapabilities": []}},
                       {"_meta": {"io.modelcontextprotocol/clientCapabilities": {"extensions": {}}}}]:
        assert not declares_tasks(undeclared)
