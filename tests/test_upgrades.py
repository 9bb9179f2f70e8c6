"""Rolling upgrades: a conversation that waits for a person under one release is finished by the
next one, in another worker process, when the change follows the upgrade policy (docs/deployment.md) (a change to
the commands the workflow issues goes behind `workflow.patched`).

What this proves, and what it does not: the "next release" is tests/next_release.py, today's
TeamWorkflow plus a change that adds a command before the first turn (the kind of change that
breaks old histories). A worker of it, with no workflow cache, replays the parked history from
the server, takes the answer and the approval, and finishes the conversation; a new conversation
on it gets the new behaviour; and the same change without the guard is caught as
non-determinism by replaying that history (the negative control). Real future releases are held
to the same standard by the recorded histories of this release (tests/histories/, replayed by
test_replay.py), which include conversations parked mid-wait.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from durable_teams.examples import support
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, HumanReply

from .next_release import PATCH_ID, Guarded, Unguarded
from .record_histories import parked
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ANSWER = support.ANSWER


@contextmanager
def worker_process(address: str, task_queue: str, workflow: str | None = None) -> Iterator[None]:
    """A worker of this release (or of `workflow`, the next one) in its own process."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.worker_process", address, task_queue,
                             *([workflow] if workflow else [])],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "worker ready"
        yield
    finally:
        proc.terminate()  # the release is retired: the process is gone, and its cache with it
        proc.wait(timeout=30)


async def answer_and_approve(handle: WorkflowHandle) -> None:
    """The customer's order number, then a person's approval of the refund."""
    asked = await pending_question(handle)
    await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=asked.question_id,
                                                                text="Order 4711"))
    approval = await pending_question(handle)
    while approval.question_id == asked.question_id:  # the answer's task has not run yet
        approval = await pending_question(handle)
    assert approval.kind == "approval" and approval.tool == "execute_refund"
    await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=approval.question_id,
                                                                approved=True))


def patch_markers(history: WorkflowHistory) -> list[bytes]:
    """The markers of the next release's patch (other patches of this release may be there)."""
    return [e.SerializeToString() for e in history.events
            if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and PATCH_ID.encode() in e.SerializeToString()]


def new_timers(history: WorkflowHistory) -> list[str]:
    return [e.user_metadata.summary.data.decode() for e in history.events
            if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
            and b"new in this release" in e.user_metadata.summary.data]


async def replay(history: WorkflowHistory, workflow: type) -> BaseException | None:
    replayer = Replayer(workflows=[workflow], data_converter=pydantic_data_converter)
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


async def test_a_conversation_parked_on_a_person_finishes_under_the_next_release(
    client: Client, task_queue: str
) -> None:
    address = client.service_client.config.target_host
    start = ConversationInput(team_name="support", task=support.QUESTION)
    with worker_process(address, task_queue):  # this release
        handle = await client.start_workflow(TeamWorkflow.run, start, id=f"upgrade-{uuid.uuid4().hex[:8]}",
                                             task_queue=task_queue)
        assert (await pending_question(handle)).text == "Sorry to hear that! What's your order number?"
        await parked(handle)
    parked_history = await handle.fetch_history()

    # the next release's change, unguarded, cannot continue this conversation; guarded, it can
    assert isinstance(await replay(parked_history, Unguarded), NondeterminismError)
    assert await replay(parked_history, Guarded) is None

    with worker_process(address, task_queue, "tests.next_release:Guarded"):  # the next release
        handle = client.get_workflow_handle_for(TeamWorkflow.run, handle.id)
        await answer_and_approve(handle)
        result = await handle.result()
        history = await handle.fetch_history()
        transcript = [(m.name, m.content) for m in await handle.query(TeamWorkflow.transcript, True)]
        # a conversation started under the next release gets its new behaviour
        fresh = await client.start_workflow(TeamWorkflow.run, start, id=f"{handle.id}-new",
                                            task_queue=task_queue)
        await answer_and_approve(fresh)
        fresh_result = await fresh.result()
        fresh_history = await fresh.fetch_history()

    assert (result.status, result.answer) == ("completed", ANSWER)
    assert ("ask_human", "Order 4711") in transcript and ("execute_refund", "success") in transcript
    assert patch_markers(history) == [] and new_timers(history) == []  # kept the old commands
    assert (fresh_result.status, fresh_result.answer) == ("completed", ANSWER)
    assert len(patch_markers(fresh_history)) == 1
    assert new_timers(fresh_history) == ['"new in this release"']



async def test_the_worker_stops_gracefully_on_sigterm(client: Client, task_queue: str) -> None:
    """What a rolling deployment sends: the worker stops taking tasks, lets running ones finish,
    tells the server, and exits cleanly (docker-compose.yml gives it the time to)."""
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "TEMPORAL_TASK_QUEUE": task_queue, "DURABLE_TEAMS_GRACEFUL_SHUTDOWN_SECONDS": "5"}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DURABLE_TEAMS_ENCRYPTION_KEY"):
        env.pop(name, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "worker.py", cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    seen = b""
    while b"Worker: polling" not in seen:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        assert line, seen.decode()
        seen += line
    proc.send_signal(signal.SIGTERM)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert "Worker: stopped." in out.decode() and proc.returncode == 0, (seen + out).decode()
