"""The CLI on flagged answers and refused signals, in a subprocess against the dev server:
`run` prints a cut-off or filtered answer with one warning line on stderr and exits 3;
`status` lists the signals a conversation refused, one line each; `transcript` of a failed
conversation needs no worker."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.cli.console import FLAG_WARNINGS, FLAGGED_EXIT, format_message
from durable_teams.client.send import send_turn
from durable_teams.client.start import start_conversation
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows import labels
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .teams import TEAM, echo, finishing

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


@pytest.mark.parametrize(("finish_reason", "status", "code"), [
    ("length", "truncated", FLAGGED_EXIT), ("content_filter", "filtered", FLAGGED_EXIT), ("stop", "completed", 0),
])
async def test_run_prints_a_flagged_answer_with_a_warning_and_a_distinct_exit_code(
    client: Client, task_queue: str, finish_reason: str, status: str, code: int
) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(finishing)):
        ran = await run_cli("run", "echo", finish_reason, env=cli_env(client, task_queue), timeout=120)
    assert ran.code == code, ran
    assert "[echo] partial answer\n" in ran.out
    warnings = [line for line in ran.err.splitlines() if line.startswith("warning:")]
    assert warnings == ([FLAG_WARNINGS[status]] if code else []), ran
    assert "Traceback" not in ran.err


async def test_status_lists_refused_signals_one_line_each(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, single_turn=False),
            id=f"refused-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await handle.signal("no_such_signal", args=[1])
        await handle.signal("post_message", args=[{"text": "  "}])
        await send_turn(client, handle.id, "still there?")  # signals are handled first
        refused = (await handle.query(TeamWorkflow.status)).refused_signals
        shown = await run_cli("status", handle.id, env=cli_env(client, task_queue))
        await handle.signal(TeamWorkflow.close)
    assert shown.code == 0, shown
    lines = [line for line in shown.out.splitlines() if line.startswith("refused signal")]
    assert len(refused) == 2 and lines == [
        f"refused signal {r.signal!r} at {r.at:%Y-%m-%d %H:%M:%S} UTC: {r.reason}" for r in refused]
    assert lines[0].startswith("refused signal 'no_such_signal' at ")
    assert lines[1].endswith(" UTC: the message is empty")


def failing(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    raise ApplicationError("upstream is down", non_retryable=True)


async def test_transcript_of_a_failed_conversation_needs_no_worker(client: Client, task_queue: str) -> None:
    """No result carries it: the CLI rebuilds it by replaying the history, then says why the
    conversation failed (exit 1)."""
    wid = f"failed-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(failing)):
        with pytest.raises(WorkflowFailureError):
            await client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="are you there?"),
                id=wid, task_queue=task_queue)
        live = await client.get_workflow_handle(wid).query(TeamWorkflow.transcript, True)
    shown = await run_cli("transcript", wid, "--full", env=cli_env(client, task_queue))
    assert shown.code == 1, shown
    assert shown.out.splitlines() == [format_message(m) for m in live]
    assert shown.out.splitlines() == [
        "[user] are you there?", "[echo] The model call for echo failed: upstream is down"]
    assert shown.err == (f"durable-teams: conversation {wid} failed: "
                         "The model call for echo failed: upstream is down\n")


async def test_a_server_without_our_search_attributes_still_starts_conversations(client: Client) -> None:
    """A namespace set up by an older release lacks Team and Task: the conversation starts
    unlabelled (a worker registers them when it starts) instead of failing."""
    namespace = f"old-{uuid.uuid4().hex[:6]}"
    await client.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=Duration(seconds=86_400)))
    old = await Client.connect(client.service_client.config.target_host, namespace=namespace,
                               data_converter=client.data_converter)
    for _ in range(100):  # a new namespace takes a moment to reach every service
        try:
            handle = await start_conversation(old, "echo", ConversationInput(team_name="echo", task="hi"),
                                              id=f"old-{uuid.uuid4().hex[:6]}", task_queue="nobody")
            break
        except RPCError as err:
            assert err.status == RPCStatusCode.NOT_FOUND, err
            await asyncio.sleep(0.1)
    described = await handle.describe()
    assert described.typed_search_attributes.get(labels.TEAM) is None
    assert await described.static_summary() == "echo: hi"
    await handle.terminate()


def test_a_worker_serves_the_examples_only_when_asked_or_given_no_teams() -> None:
    from durable_teams.worker.run import load_teams

    examples = {"faang", "support", "acme"}
    assert examples <= {t.spec.name for t in load_teams([])}
    assert [t.spec.name for t in load_teams(["tests.test_chat_clients:DESK"])] == ["desk"]
    both = {t.spec.name for t in load_teams(["tests.test_chat_clients:DESK"], examples=True)}
    assert examples | {"desk"} <= both
