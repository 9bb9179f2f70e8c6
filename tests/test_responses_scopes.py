"""Scoped tokens on the Responses routes (durable_teams/gateway/doors/responses/door.py, scopes.py): a
response of another scope's thread is the same 404 as a response that does not exist, on
create with `previous_response_id` (a message, or an `mcp_approval_response` that would run the
refund), retrieve, a resumed stream, input_items, cancel and DELETE (which deletes nothing).
The scope's own token and an operator token see it; through the openai client and raw
HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway of its own, a few seconds

TOKENS = [Token("tok-a", "shop"), Token("tok-b", "crm"), Token("tok-op")]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def requests_naming(response_id: str, approval: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every Responses route that names a response: (method, path, JSON body)."""
    return [
        ("POST", "/v1/responses", {"model": "desk", "input": "Order 9", "previous_response_id": response_id}),
        ("POST", "/v1/responses", {"model": "desk", "previous_response_id": response_id, "input": [
            {"type": "mcp_approval_response", "approval_request_id": approval, "approve": True}]}),
        ("GET", f"/v1/responses/{response_id}", None),
        ("GET", f"/v1/responses/{response_id}?stream=true", None),
        ("GET", f"/v1/responses/{response_id}?stream=true&starting_after=2", None),
        ("GET", f"/v1/responses/{response_id}/input_items", None),
        ("POST", f"/v1/responses/{response_id}/cancel", {}),
        ("DELETE", f"/v1/responses/{response_id}", None),
    ]


async def test_another_scopes_response_is_the_same_404_as_a_missing_one(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=TOKENS, teams=["desk"]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        shop = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tok-a", max_retries=0)
        crm = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tok-b", max_retries=0)
        first = await shop.responses.create(model="desk", input=FIRST)
        second = await shop.responses.create(model="desk", input="Order 4711", previous_response_id=first.id)
        approval = next(item for item in second.output if item.type == "mcp_approval_request").id
        ref = ResponseRef.parse(second.id)
        missing = ResponseRef(f"desk-resp-{uuid.uuid4().hex[:16]}", ref.turn, ref.start, ref.step).id

        async def ask(token: str, response_id: str) -> list[httpx.Response]:
            return [await http.request(method, path, json=body, headers=bearer(token))
                    for method, path, body in requests_naming(response_id, approval)]
        hidden = await ask("tok-b", second.id)
        absent = await ask("tok-b", missing)
        with pytest.raises(openai.NotFoundError) as by_client:
            await crm.responses.create(model="desk", previous_response_id=second.id, input=[
                {"type": "mcp_approval_response", "approval_request_id": approval, "approve": True}])
        with pytest.raises(openai.NotFoundError):
            await crm.responses.retrieve(second.id)
        with pytest.raises(openai.NotFoundError):
            await crm.responses.input_items.list(second.id)
        with pytest.raises(openai.NotFoundError):
            await crm.responses.cancel(second.id)
        refunds_after_crm = list(REFUNDS)
        seen_by_operator = await http.get(f"/v1/responses/{second.id}", headers=bearer("tok-op"))
        done = await shop.responses.create(model="desk", previous_response_id=second.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": approval, "approve": True}])

    for (method, path, _), theirs, none in zip(requests_naming(second.id, approval), hidden, absent, strict=True):
        assert theirs.status_code == none.status_code, (method, path, theirs.text, none.text)
        assert theirs.text.replace(second.id, "ID") == none.text.replace(missing, "ID"), (method, path)
        assert theirs.status_code == 404, (method, path, theirs.text)
    assert by_client.value.status_code == 404 and refunds_after_crm == []
    assert seen_by_operator.status_code == 200 and seen_by_operator.json()["id"] == second.id
    assert first.output_text == ASKED and done.output_text == DONE and REFUNDS == ["4711"]
