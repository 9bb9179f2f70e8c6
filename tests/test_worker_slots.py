"""How many conversations a worker moves at once: `$DURABLE_TEAMS_WORKFLOW_SLOTS` (a number, or
`auto` for slots by the machine's CPU), a bad value refused in one line before anything starts,
and `build_worker` taking a tuner of its own. With local model calls a conversation holds its
workflow-task slot for the whole call, so the slots bound the model calls running at once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import WorkerTuner

from durable_teams.client.start import TASK_TIMEOUT
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import MAX_ACTIVITIES, build_worker, cpu_tuner
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.worker.settings import SLOTS_ENV, slot_options
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelCalls, ModelRequest, ModelResponse
from durable_teams.workflows.state import ConversationInput

from .cli_process import worker_refusal
from .conftest import running_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_the_slots_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SLOTS_ENV, raising=False)
    assert slot_options() == {}  # the SDK's default
    monkeypatch.setenv(SLOTS_ENV, " 300 ")
    assert slot_options() == {"max_concurrent_workflow_tasks": 300, "max_concurrent_local_activities": 300}
    monkeypatch.setenv(SLOTS_ENV, "AUTO")
    assert list(slot_options()) == ["tuner"]
    assert isinstance(slot_options()["tuner"], WorkerTuner)
    monkeypatch.setenv(SLOTS_ENV, "100000")
    assert slot_options()["max_concurrent_workflow_tasks"] == 100_000
    for bad in ("1", "0", "-5", "1.5", "lots", "auto:0.8", "100001", "99999999999999999999"):
        monkeypatch.setenv(SLOTS_ENV, bad)
        with pytest.raises(SystemExit, match=f"{SLOTS_ENV} must be a whole number from 2 to 100,000 "
                                             f"or 'auto', not '{bad}'"):
            slot_options()


def test_a_bad_slot_count_is_one_line_from_the_worker() -> None:
    assert worker_refusal(**{SLOTS_ENV: "many"}) == (
        1, "", f"durable-teams worker: {SLOTS_ENV} must be a whole number from 2 to 100,000 or 'auto', "
        "not 'many'")


class CountingModel(ScriptedModel):
    """Holds every call until `until_running` calls run at once (or `seconds` passed, for a
    worker whose slots never admit that many); records the most calls it had running at once.
    Waiting on the count rather than a fixed time keeps a loaded machine, which starts the
    conversations slowly, from ending early calls before later ones begin."""

    def __init__(self, seconds: float, until_running: int) -> None:
        super().__init__({"a": [say("done")] * 20})
        self.seconds, self.running, self.most = seconds, 0, 0
        self.until_running, self.enough = until_running, asyncio.Event()

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        self.running += 1
        self.most = max(self.most, self.running)
        if self.running >= self.until_running:
            self.enough.set()
        try:
            try:
                await asyncio.wait_for(self.enough.wait(), self.seconds)
            except TimeoutError:
                pass
            return await super().complete(req, messages, tools)
        finally:
            self.running -= 1


async def run_conversations(client: Client, task_queue: str, count: int, slots: dict[str, object],
                            *, seconds: float, until_running: int) -> int:
    """`count` conversations of one local model call each, to the end, on a worker with `slots`:
    the most model calls that ran at once (each call held until `until_running` ran at once,
    at most `seconds`)."""
    team = Swarm([Agent("a", "Answers.", model="scripted")], model_calls=ModelCalls(local=True)).compile()
    model = CountingModel(seconds, until_running)
    async with running_worker(client, task_queue, [team], model, **slots):
        # the workflow task timeout conversations start with (start_conversation's): a local call
        # holds the task open, and Temporal's 10 s default had the held calls' heartbeats come
        # too late under load ("Task not found when completing"), each call run again
        results = await asyncio.wait_for(asyncio.gather(*(client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="hi", set_search_attributes=False),
            id=f"slots-{i}-{uuid.uuid4().hex[:6]}", task_queue=task_queue, task_timeout=TASK_TIMEOUT)
            for i in range(count))), 60)
    assert [r.answer for r in results] == ["done"] * count
    return model.most


async def test_local_calls_at_once_are_bounded_by_the_slots(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SLOTS_ENV, "2")
    assert await run_conversations(client, task_queue, 6, slot_options(), seconds=0.5, until_running=3) <= 2
    # A tuner passed to build_worker: at least its minimum of 5 at once, more while the CPU allows.
    monkeypatch.setenv(SLOTS_ENV, "auto")
    assert await run_conversations(client, task_queue + "-auto", 6, slot_options(), seconds=30,
                                   until_running=5) >= 5


async def test_a_tuner_takes_the_shared_queues_slots_and_the_own_queue_keeps_its_own(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("a", "Answers.", model="scripted")]).compile()
    tuner = cpu_tuner(0.8)
    worker = build_worker(client, [team], ScriptedModel({}), task_queue=task_queue, tuner=tuner)
    assert worker.shared.config()["tuner"] is tuner
    assert not worker.shared.config().get("max_concurrent_activities")
    assert worker.own.config()["max_concurrent_activities"] == MAX_ACTIVITIES  # regular model calls
    plain = build_worker(client, [team], ScriptedModel({}), task_queue=task_queue + "-plain")
    assert plain.shared.config()["max_concurrent_activities"] == MAX_ACTIVITIES
