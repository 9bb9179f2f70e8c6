"""Each request gets its own outcome: the answer to an approval is answered with the turn it
answered, never with a turn sent after it (which may have failed, or said something else)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from temporalio.client import Client

from durable_teams.gateway.threads import Gateway
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .test_chat_approvals import say_on
from .test_chat_clients import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script
from .test_client_robustness import until


async def test_the_approver_gets_the_turn_it_answered_not_a_later_one(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = f"desk-own-{uuid.uuid4().hex[:8]}"
        assert [await say_on(http, thread, t) for t in (FIRST, "Order 4711")] == [ASKED, APPROVAL]
        gw = Gateway(client, task_queue, poll_seconds=0.05)
        approver = await gw.begin_exchange(thread, "yes", "input-yes")  # answered; outcome not read yet
        later = await gw.converse(thread, "and another thing", "input-later")  # the next turn, done
        approved = await approver()  # read only now, after the later turn's reply

        # the same over HTTP, the next message sent as soon as the answer is taken
        other = f"desk-own-http-{uuid.uuid4().hex[:8]}"
        assert [await say_on(http, other, t) for t in (FIRST, "Order 4712")] == [ASKED, APPROVAL.replace("4711", "4712")]
        yes = asyncio.ensure_future(say_on(http, other, "yes"))

        async def answer_taken() -> bool:
            return not (await client.get_workflow_handle(other).query(TeamWorkflow.status)).pending
        await until(answer_taken, "the answer taken")
        next_one = await say_on(http, other, "and another thing")
        approved_over_http = await yes
    assert (approved.kind, approved.text) == ("reply", DONE)
    assert later.text.startswith("I saw") and next_one.startswith("I saw")
    assert approved_over_http == DONE
    assert REFUNDS == ["4711", "4712"]
