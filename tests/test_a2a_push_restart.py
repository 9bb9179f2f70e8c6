"""A2A push notifications across a worker restart: the receiver refuses the approval's
notification, the worker process is killed (SIGKILL) while the delivery waits for its next
attempt, a new worker delivers it; the completion follows. Each state change the receiver
should hear of is accepted exactly once, none lost.

Delivery is at least once: a worker killed after the receiver took a POST and before the
activity's completion reached Temporal sends it again (docs/a2a.md). This test kills the worker
in the backoff between two attempts, where nothing is in flight, so exactly once is the bound."""

from __future__ import annotations

import signal
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.doors.a2a.push_configs import PushOptions, push_id
from durable_teams.workflows.conversation import TeamWorkflow

from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .waiting import NotYet, until
from .worker_process import spawn_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # worker processes, a receiver, a sticky queue's timeout

CARDS = [card_of(support.build().compile().spec)]
TOKEN = {"Authorization": "Bearer s3cret"}
# a 2 s first backoff: room to kill the worker between two attempts (4 s after the second)
PUSH = PushOptions(allow_private=True, retry_seconds=2.0, poll_seconds=0.05)


def message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    return [event.task async for event in agent.send_message(request) if event.HasField("task")][-1]


async def test_a_due_delivery_is_made_by_the_next_worker_after_a_kill(client: Client, task_queue: str) -> None:
    address = client.service_client.config.target_host
    worker = spawn_worker(address, task_queue)
    try:
        async with receiving() as receiver, \
                running_gateway(client, task_queue, tokens=["s3cret"], cards=CARDS, a2a_push=PUSH) as url:
            agent = await create_client(f"{url}/a2a/support", ClientConfig(
                streaming=False, httpx_client=httpx.AsyncClient(headers=TOKEN, timeout=60)),
                resolver_http_kwargs={"headers": TOKEN})
            asked = await send(agent, message(support.QUESTION))
            await agent.create_task_push_notification_config(pb.TaskPushNotificationConfig(
                task_id=asked.id, url=receiver.url, token="tok"))

            async def accepted(n: int) -> bool:
                return len(receiver.accepted()) >= n
            await until(lambda: accepted(1), "the question asked when the config was set")
            receiver.refusing = 503
            await send(agent, message("Order 4711", task_id=asked.id, context_id=asked.context_id))
            pushing = client.get_workflow_handle(push_id(asked.id))

            async def between_attempts() -> bool:
                """The delivery failed at least once and its next attempt is over 0.5 s away."""
                pending = (await pushing.describe()).raw_description.pending_activities
                delivery = [a for a in pending if a.activity_type.name == "deliver_a2a_push"]
                if not delivery:
                    raise NotYet(f"no delivery pending; the receiver had {receiver.statuses}")
                info = delivery[0]
                due = info.next_attempt_schedule_time.ToDatetime(tzinfo=UTC)
                left = (due - datetime.now(UTC)).total_seconds()
                if info.state != PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED or info.attempt < 2 or left < 0.5:
                    raise NotYet(f"attempt {info.attempt}, state {info.state}, next in {left:.2f} s")
                return True
            await until(between_attempts, "the delivery waiting for its next attempt")
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            refused = len(receiver.received)
            receiver.refusing = 0
            worker = spawn_worker(address, task_queue)
            await until(lambda: accepted(2), "the approval's notification, from the new worker")
            done = await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
            await until(lambda: accepted(3), "the completion's notification")
            ended = await until(lambda: ended_push(client, push_id(asked.id)), "no delivery left in flight")
        transcript = await client.get_workflow_handle(asked.context_id).query(TeamWorkflow.transcript, True)
    finally:
        worker.kill()
        worker.wait()

    states = [body["statusUpdate"]["status"]["state"] for body in receiver.accepted()]
    assert states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    # the first question taken, then the approval refused before the kill only
    assert refused >= 2 and receiver.statuses[:refused] == [200] + [503] * (refused - 1)
    assert receiver.statuses[refused:] == [200, 200]  # no attempt repeated after the kill
    approvals = [body["statusUpdate"]["status"]["message"] for _, body in receiver.received[1:refused + 1]]
    assert len({m["messageId"] for m in approvals}) == 1  # one state change, however often tried
    assert "Approve execute_refund(" in approvals[-1]["parts"][0]["text"]
    assert done.status.state == pb.TASK_STATE_COMPLETED and ended
    assert sum(1 for m in transcript if m.role == "tool" and m.name == "execute_refund") == 1


async def ended_push(client: Client, workflow_id: str) -> bool:
    """The push workflow has no activity pending (it lingers, its work done)."""
    return not (await client.get_workflow_handle(workflow_id).describe()).raw_description.pending_activities
