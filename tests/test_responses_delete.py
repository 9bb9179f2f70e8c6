"""`DELETE /v1/responses/{id}` (durable_teams/gateway/doors/responses/by_id.py, workflows/hidden_steps.py): the
response is no longer served, by any gateway process, after a restart; its turn stays in the
thread's transcript; through the openai client and raw httpx."""

from __future__ import annotations

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import DESK, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def test_a_deleted_response_is_gone_for_every_gateway_its_turn_stays(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        async with running_gateway(client, task_queue, teams=["desk"]) as url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            one = await ai.responses.create(model="desk", input="one")
            two = await ai.responses.create(model="desk", input="two", previous_response_id=one.id)
            async with httpx.AsyncClient(timeout=30) as http:
                deleted = await http.delete(f"{url}/v1/responses/{one.id}")
                assert (deleted.status_code, deleted.json()) == (200, {"id": one.id, "object": "response",
                                                                       "deleted": True})
                again = await http.delete(f"{url}/v1/responses/{one.id}")
                assert again.status_code == 404 and "deleted" in again.json()["error"]["message"], again.text
                cancelled = await http.post(f"{url}/v1/responses/{one.id}/cancel", json={})
                assert cancelled.status_code == 404
                streamed = await http.get(f"{url}/v1/responses/{one.id}", params={"stream": "true"})
                assert streamed.status_code == 404
        async with running_gateway(client, task_queue, teams=["desk"]) as url:  # another process's view
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            with pytest.raises(openai.NotFoundError):
                await ai.responses.retrieve(one.id)
            with pytest.raises(openai.NotFoundError):
                await ai.responses.input_items.list(one.id)
            with pytest.raises(openai.NotFoundError):
                await ai.responses.delete(one.id)
            with pytest.raises(openai.NotFoundError):  # nothing to fork from either
                await ai.responses.create(model="desk", input="branch", previous_response_id=one.id)
            # the next response is served and goes on; the deleted turn stays in the transcript
            assert (await ai.responses.retrieve(two.id)).status == "completed"
            three = await ai.responses.create(model="desk", input="three", previous_response_id=two.id)
            assert "'user:one'" in three.output_text and "'user:three'" in three.output_text
            # the thread's latest deleted: it cannot be continued by its id any more
            await ai.responses.delete(three.id)
            with pytest.raises(openai.NotFoundError):
                await ai.responses.create(model="desk", input="four", previous_response_id=three.id)
            status = await client.get_workflow_handle(ResponseRef.parse(one.id).thread).query(TeamWorkflow.status)
            assert sorted(status.hidden_steps) == sorted(ResponseRef.parse(r).key for r in (one.id, three.id))


async def test_a_deletion_is_carried_across_continue_as_new(client: Client, task_queue: str) -> None:
    team = Swarm([Agent("desk", "Help.")], name="longdesk").compile()
    team.spec.continue_as_new_after_events = 20  # a new run after about every turn
    async with running_worker(client, task_queue, [team], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["longdesk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        one = await ai.responses.create(model="longdesk", input="one")
        handle = client.get_workflow_handle(ResponseRef.parse(one.id).thread)
        first_run = (await handle.describe()).run_id
        latest = (await ai.responses.create(model="longdesk", input="two", previous_response_id=one.id)).id
        await ai.responses.delete(one.id)
        for text in ("three", "four"):
            latest = (await ai.responses.create(model="longdesk", input=text, previous_response_id=latest)).id
        assert (await handle.describe()).run_id != first_run
        with pytest.raises(openai.NotFoundError):
            await ai.responses.retrieve(one.id)
        assert (await ai.responses.retrieve(latest)).status == "completed"


async def test_another_scope_cannot_delete_a_response(client: Client, task_queue: str) -> None:
    tokens = [Token("t-shop", "shop"), Token("t-crm", "crm")]
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=tokens, teams=["desk"]) as url:
        shop = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t-shop", max_retries=0)
        crm = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t-crm", max_retries=0)
        mine = await shop.responses.create(model="desk", input="one")
        with pytest.raises(openai.NotFoundError):  # the same 404 as for no response
            await crm.responses.delete(mine.id)
        assert (await shop.responses.retrieve(mine.id)).status == "completed"
