"""Workers on one task queue that serve different teams: Temporal gives any of them any task, so
a team some lack fails at random. A worker names its teams (a digest) in its identity; the next
worker to start on the queue warns, and the failure itself says the cause."""

from __future__ import annotations

import logging
import uuid

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_teams.client.connection import TASK_QUEUE
from durable_teams.client.server_state import workers_on
from durable_teams.examples import acme, faang
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.team_sets import team_set, team_set_in, worker_identity
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .waiting import until

pytestmark = pytest.mark.workflow


def test_the_identity_names_the_team_set_not_the_order() -> None:
    assert team_set(["b", "a"]) == team_set(["a", "b", "a"]) != team_set(["a"])
    identity = worker_identity(["faang"], scripted=True)
    assert team_set_in(identity) == team_set(["faang"]) and identity.endswith("(scripted model)")
    assert team_set_in("1234@host") is None  # an older worker says nothing: not taken as different


async def polled_by(client: Client, task_queue: str, digest: str) -> None:
    """Until a worker with team set `digest` shows among the queue's pollers (bounded)."""
    async def polling() -> bool:
        return any(team_set_in(w) == digest for w in await workers_on(client, task_queue))
    await until(polling, f"a poller with team set {digest} on {task_queue}")


async def test_a_worker_joining_a_queue_with_other_teams_warns_and_the_failure_says_why(
        client: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    acme_team, faang_team = acme.build().compile(), faang.build().compile()
    async with running_worker(client, task_queue, [acme_team], ScriptedModel(acme.SCRIPT)):
        await polled_by(client, task_queue, team_set(["acme"]))
    # the acme worker has stopped; its poll stays on record for a while, as a crashed one's does
    async with running_worker(client, task_queue, [faang_team], ScriptedModel(faang.SCRIPT)):
        warnings = [r.getMessage() for r in caplog.records if "has workers serving other teams" in r.getMessage()]
        assert len(warnings) == 1 and warnings[0].startswith(f"task queue {task_queue!r} has workers serving "
                                                            "other teams ("), warnings
        assert "--team modules, or each set of teams its own TEMPORAL_TASK_QUEUE." in warnings[0]
        handle = await client.start_workflow(TeamWorkflow.run, ConversationInput(team_name="acme", task="hi"),
                                             id=f"mixed-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    message = failed.value.cause.message  # type: ignore[union-attr]
    assert message.startswith("No team named 'acme' on this worker (known: faang). Other workers on task "
                              f"queue {task_queue!r} serve other teams ("), message
    assert message.endswith("every worker on one task queue must serve the same teams."), message


async def test_workers_with_the_same_teams_say_nothing(client: Client, task_queue: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    team = faang.build().compile()
    other = await Client.connect(client.service_client.config.target_host, namespace=client.namespace,
                                 data_converter=client.data_converter)  # one worker per queue per client
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT)):
        await polled_by(client, task_queue, team_set(["faang"]))
        async with running_worker(other, task_queue, [team], ScriptedModel(faang.SCRIPT)):
            pass
    assert not [r for r in caplog.records if "serving other teams" in r.getMessage()]
    assert task_queue != TASK_QUEUE
