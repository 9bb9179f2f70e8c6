"""`status` of a conversation whose workflow task keeps failing says why, in one line: before,
the query's transport error ("h2 protocol error") was all a person saw."""

from __future__ import annotations

import re
import uuid

import pytest
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .inspect_history import task_retried
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def test_status_of_a_conversation_whose_task_keeps_failing_says_why(client: Client, task_queue: str) -> None:
    wid = f"stuck-{uuid.uuid4().hex[:6]}"
    async with running_worker(client, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
        handle = await client.start_workflow("NoSuchWorkflow", "x", id=wid, task_queue=task_queue)
        await until(lambda: task_retried(handle), "its first workflow task failed and retried")
        outcome = await run_cli("status", wid, env=cli_env(client, task_queue))
        transcript = await run_cli("transcript", wid, env=cli_env(client, task_queue))
        await handle.terminate()
    line = one_line_failure(outcome)
    assert line.startswith(f"durable-teams: conversation {wid} is stuck: its workflow task keeps failing "
                           "(attempt "), line
    assert line.endswith(", workflow worker unhandled failure): Workflow class NoSuchWorkflow is not registered "
                         "on this worker, available workflows: A2APushWorkflow, RunWebhookWorkflow, ScheduledTurnWorkflow, TeamWorkflow (the worker's log has the whole error)"), line
    assert outcome.out == f"workflow: {wid} (RUNNING)\n"
    # The same line, but for the attempt number: the task may be retried between the two reads.
    def same(text: str) -> str:
        return re.sub(r"\(attempt \d+", "(attempt N", text)
    assert same(one_line_failure(transcript)) == same(line) and transcript.out == ""
