"""Workflow input that does not fit `ConversationInput`, sent the way the `temporal` CLI, the
Web UI or a raw client would: the workflow ends at once as FAILED with a non-retryable
`ApplicationError` naming the field and what was expected, and never fails a workflow task
(which Temporal would retry forever)."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import MAX_TURN_BYTES

from .conftest import binary, running_worker
from .inspect_history import raw, task_failures
from .teams import TEAM, echo

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

NO_VALUE = object()
"""Start the workflow with no input at all."""


BAD_INPUTS = [
    # (id, the input(s), the error type, what the message must say)
    ("unknown-field", [{"team_name": "echo", "task": "hi", "priority": 3}], "InvalidInput",
     "workflow input: priority: unknown field; ConversationInput has: team, team_name, task"),
    ("misspelled-task", [{"team_name": "echo", "taks": "hi"}], "InvalidInput",
     "taks: unknown field (did you mean 'task'?)"),
    ("misspelled-team-name", [{"teamname": "echo", "task": "hi"}], "InvalidInput",
     "teamname: unknown field (did you mean 'team_name'?)"),
    ("task-not-a-string", [{"team_name": "echo", "task": 42}], "InvalidInput",
     "task: input should be a valid string, got 42"),
    ("single-turn-not-a-boolean", [{"team_name": "echo", "task": "hi", "single_turn": "maybe"}],
     "InvalidInput", "single_turn: input should be a valid boolean"),
    ("context-not-an-object", [{"team_name": "echo", "task": "hi", "context": "ana"}],
     "InvalidInput", "context: input should be a valid dictionary, got 'ana'"),
    ("history-not-a-list", [{"team_name": "echo", "history": "hello"}], "InvalidInput",
     "history: input should be a valid list"),
    ("history-bad-role", [{"team_name": "echo", "history": [{"role": "human", "content": "x"}]}],
     "InvalidInput", "history.0.role: input should be 'system', 'user', 'assistant' or 'tool'"),
    ("team-spec-misspelled", [{"team": {"agents": {"a": {"nmae": "a"}}}, "task": "hi"}],
     "InvalidInput", "team.agents.a.name: required field missing; team.agents.a.nmae: unknown "
     "field (did you mean 'name'?)"),
    ("bare-string", ["what is 2+2?"], "InvalidInput",
     "workflow input: expected a JSON object, one ConversationInput (optional: team, team_name"),
    ("number", [42], "InvalidInput", "expected a JSON object, one ConversationInput"),
    ("boolean", [True], "InvalidInput", "got a boolean True"),
    ("list", [["echo", "hi"]], "InvalidInput", "got a list ['echo', 'hi']"),
    ("raw-bytes", [b"\xff\xfe not utf-8"], "InvalidInput", "got raw bytes"),
    ("not-json", [raw(b'{"team_name": "echo", task: hi}')], "InvalidInput",
     "workflow input: value 1 could not be decoded as json/plain: Invalid JSON: key must be a string"),
    ("not-utf8-json", [raw(b'"\xff\xfe"')], "InvalidInput", "could not be decoded as json/plain"),
    ("lone-surrogate", [raw(b'{"team_name": "echo", "task": "a\\ud800b"}')], "InvalidInput",
     "could not be decoded as json/plain: Invalid JSON: unexpected end of hex escape"),
    ("unknown-encoding", [raw(b"hi", b"text/klingon")], "InvalidInput",
     "value 1 could not be decoded as text/klingon: 'Unknown payload encoding text/klingon'"),
    ("null", [None], "InvalidInput", "workflow input: no value was sent; expected one ConversationInput"),
    ("no-input-at-all", NO_VALUE, "InvalidInput", "workflow input: no value was sent"),
    ("two-inputs", [{"team_name": "echo", "task": "hi"}, {"task": "again"}], "InvalidInput",
     "workflow input: 2 values were sent; expected one ConversationInput"),
    ("neither-task-nor-history", [{"team_name": "echo"}], "InvalidInput",
     "a single-turn run needs 'task' (the user's message) or 'history'; set single_turn=false"),
    ("empty-task", [{"team_name": "echo", "task": ""}], "InvalidInput", "'task' is empty"),
    ("blank-task", [{"team_name": "echo", "task": " \n\t "}], "InvalidInput", "'task' is empty"),
    ("oversized-task", [{"team_name": "echo", "task": "x" * (MAX_TURN_BYTES + 1)}], "InvalidInput",
     f"'task' is over {MAX_TURN_BYTES:,} bytes"),
    ("no-team", [{"task": "hi"}], "InvalidInput", "give 'team' (a team spec) or 'team_name'"),
    ("empty-team-name", [{"team_name": " ", "task": "hi"}], "InvalidInput", "neither was set"),
    ("state-from-outside", [{"team_name": "echo", "state": {"in_progress": {"turn": 1, "agent": "x",
                                                                     "view_id": 5}}}],
     "InvalidInput", "'state' is set by continue-as-new and forks only"),
    ("fork-in-a-turn", [{"team_name": "echo", "forked_from": "t@x.1", "state": {
        "in_progress": {"turn": 1, "agent": "x", "view_id": 5}}}],
     "InvalidInput", "a fork's 'in_progress' resumes its turn, which must be the first turn queued (turn 1)"),
    ("fork-in-a-turn-of-no-run", [{"team_name": "echo", "forked_from": "t@x.1", "state": {
        "queue": [[1, {"text": "hi"}]], "in_progress": {"turn": 1, "agent": "x", "view_id": 5}}}],
     "InvalidInput", "a fork's 'in_progress' names agent run 5, which its transcript lacks"),
    ("fork-with-a-turn-queued", [{"team_name": "echo", "forked_from": "t@x.1", "state": {
        "queue": [[1, {"text": "hi"}]]}}],
     "InvalidInput", "a fork's 'state' is a conversation between turns, or in one turn resumed"),
    ("unknown-team", [{"team_name": "nope", "task": "hi"}], "UnknownTeam",
     "No team named 'nope' on this worker (known: echo)."),
]


async def failure_of(handle: WorkflowHandle) -> ApplicationError:
    """The workflow's failure: bounded, because a workflow task failing would retry forever."""
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), timeout=30)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


@pytest.mark.parametrize(("args", "error_type", "says"), [c[1:] for c in BAD_INPUTS],
                         ids=[c[0] for c in BAD_INPUTS])
async def test_bad_workflow_input_fails_the_workflow_at_once_and_says_why(
    client: Client, task_queue: str, args: Any, error_type: str, says: str
) -> None:
    model = ScriptedModel(echo)
    async with running_worker(client, task_queue, [TEAM], model):
        handle = await client.start_workflow(
            "TeamWorkflow", args=[] if args is NO_VALUE else args,
            id=f"bad-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        error = await failure_of(handle)
        described = await handle.describe()
        failures = await task_failures(handle)
    assert (error.type, error.non_retryable) == (error_type, True)
    assert says in error.message
    assert described.status == WorkflowExecutionStatus.FAILED
    assert failures == 0
    assert model.requests == []  # nothing ran


async def test_the_same_input_done_right_runs(client: Client, task_queue: str) -> None:
    """The control: what the cases above get wrong, sent right, answers."""
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        result = await client.execute_workflow(
            "TeamWorkflow", {"team_name": "echo", "task": "hi", "context": {"a": 1}},
            id=f"good-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    assert result["answer"] == "heard: hi" and result["status"] == "completed"


@pytest.mark.parametrize(("inputs", "says"), [
    (['{"team_name": "echo", "taks": "hi"}'], "taks: unknown field (did you mean 'task'?)"),
    (['"what is 2+2?"'], "expected a JSON object"),
    (['{"team_name": "echo", "task": "hi"}', '"again"'], "2 values were sent"),
    ([], "no value was sent"),
], ids=["misspelled", "bare-string", "two-inputs", "no-input"])
async def test_from_the_temporal_cli(client: Client, task_queue: str, inputs: list[str], says: str) -> None:
    """`temporal workflow start --input ...` exactly as a person types it."""
    workflow_id = f"cli-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        argv = [binary("temporal"), "workflow", "start", "--address",
                client.service_client.config.target_host, "--type", "TeamWorkflow",
                "--task-queue", task_queue, "--workflow-id", workflow_id]
        for value in inputs:
            argv += ["--input", value]
        started = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        handle = client.get_workflow_handle(workflow_id)
        error = await failure_of(handle)
        failures = await task_failures(handle)
    assert (error.type, error.non_retryable, failures) == ("InvalidInput", True, 0)
    assert says in error.message


async def test_a_new_conversation_records_no_patch_markers(client: Client, task_queue: str) -> None:
    """0.1.0 is the baseline: a conversation asks no `workflow.patched` (each would cost a marker
    and a `TemporalChangeVersion` upsert) until a later release adds one."""
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        wid = f"patches-{uuid.uuid4().hex[:8]}"
        await client.execute_workflow("TeamWorkflow", {"team_name": "echo", "task": "hi"},
                                      id=wid, task_queue=task_queue)
    history = await client.get_workflow_handle(wid).fetch_history()
    assert [e.event_type for e in history.events].count(EventType.EVENT_TYPE_MARKER_RECORDED) == 0
