"""A `previous_response_id` that is not its thread's latest continues from there on a fork
(durable_teams/gateway/doors/responses/forks.py): the original untouched, nothing of the prefix run
again, the same request sent again the same fork; through the openai client and raw httpx."""

from __future__ import annotations

import ast
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.doors.responses.from_log import ResponseRef
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.messages import ModelRequest

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import APPROVAL, ASKED, DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

CALLS: list[str] = []


def counted(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """`desk_script`, each model call noted with the last message it answered."""
    CALLS.append(str(messages[-1]["content"]))
    return desk_script(req, messages, tools)


def users(text: str) -> list[str]:
    """The user messages a desk's "I saw [...]" answer saw, in order."""
    assert text.startswith("I saw "), text
    return [m[5:] for m in ast.literal_eval(text[6:]) if m.startswith("user:")]


def thread_of(response_id: str) -> str:
    return ResponseRef.parse(response_id).thread


async def test_an_earlier_response_continues_on_a_fork_the_original_untouched(
        client: Client, task_queue: str) -> None:
    CALLS.clear()
    tokens = [Token("t-op"), Token("t-shop", "shop"), Token("t-crm", "crm")]
    async with running_worker(client, task_queue, [DESK], ScriptedModel(counted)), \
            running_gateway(client, task_queue, tokens=tokens, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t-shop", max_retries=0)
        one = await ai.responses.create(model="desk", input="one")
        two = await ai.responses.create(model="desk", input="two", previous_response_id=one.id)
        three = await ai.responses.create(model="desk", input="three", previous_response_id=two.id)
        original = client.get_workflow_handle(thread_of(one.id))
        events_before = len((await original.fetch_history()).events)
        assert CALLS == ["one", "two", "three"]

        branch = await ai.responses.create(model="desk", input="branch", previous_response_id=one.id)
        # the fork saw turn 1 and its answer, not turns 2 and 3; only its own model call ran
        assert users(branch.output_text) == ["one", "branch"]
        assert CALLS == ["one", "two", "three", "branch"]
        fork = thread_of(branch.id)
        assert fork != thread_of(one.id)
        memo = await (await client.get_workflow_handle(fork).describe()).memo()
        assert str(memo["forked_from"]).startswith(f"{thread_of(one.id)}@")
        assert len((await original.fetch_history()).events) == events_before
        # the original goes on from its latest, the fork from its own
        four = await ai.responses.create(model="desk", input="four", previous_response_id=three.id)
        assert thread_of(four.id) == thread_of(one.id) and users(four.output_text) == ["one", "two", "three", "four"]
        more = await ai.responses.create(model="desk", input="more", previous_response_id=branch.id)
        assert thread_of(more.id) == fork and users(more.output_text) == ["one", "branch", "more"]
        # the fork's own earlier response forks again (a fork of a fork)
        again = await ai.responses.create(model="desk", input="branch b", previous_response_id=branch.id)
        assert thread_of(again.id) not in (fork, thread_of(one.id))
        assert users(again.output_text) == ["one", "branch", "branch b"]

        # the same request sent again (its Idempotency-Key) is the same fork and response
        calls = len(CALLS)
        keyed = await ai.responses.create(model="desk", input="keyed", previous_response_id=two.id,
                                          extra_headers={"Idempotency-Key": "fork-1"})
        resent = await ai.responses.create(model="desk", input="keyed", previous_response_id=two.id,
                                           extra_headers={"Idempotency-Key": "fork-1"})
        assert resent.id == keyed.id and len(CALLS) == calls + 1
        assert users(keyed.output_text) == ["one", "two", "keyed"]
        # streamed, raw: the fork's events as any response's
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream("POST", f"{url}/v1/responses", headers={"Authorization": "Bearer t-shop"},
                                   json={"model": "desk", "input": "streamed", "stream": True,
                                         "previous_response_id": one.id}) as streamed:
                assert streamed.status_code == 200
                frames = [line async for line in streamed.aiter_lines() if line.startswith("event: ")]
            assert frames[0] == "event: response.created" and frames[-1] == "event: response.completed"
            # another scope's caller: the same 404 as for no response
            crm = await http.post(f"{url}/v1/responses", headers={"Authorization": "Bearer t-crm"},
                                  json={"model": "desk", "input": "x", "previous_response_id": one.id})
            assert crm.status_code == 404, crm.text
        assert len((await original.fetch_history()).events) > events_before  # "four" went on


async def test_a_question_answered_since_is_no_fork_point_a_refund_is_never_paid_again(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        asked = await ai.responses.create(model="desk", input=FIRST)
        assert asked.output_text == ASKED
        approval = await ai.responses.create(model="desk", input="Order 4711", previous_response_id=asked.id)
        assert approval.output_text == APPROVAL
        with pytest.raises(openai.ConflictError) as conflict:
            await ai.responses.create(model="desk", input="Order 1", previous_response_id=asked.id)
        assert conflict.value.code == "not_latest_response" and approval.id in conflict.value.message
        assert "inside its turn" in conflict.value.message
        assert isinstance(conflict.value.body, dict) and conflict.value.body["latest_response_id"] == approval.id
        # the approval taken, the refund paid once; a fork after it does not pay it again
        request = next(item for item in approval.output if item.type == "mcp_approval_request")
        done = await ai.responses.create(model="desk", previous_response_id=approval.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}])
        assert (done.output_text, REFUNDS) == (DONE, ["4711"])
        await ai.responses.create(model="desk", input="thanks", previous_response_id=done.id)
        forked = await ai.responses.create(model="desk", input="and now?", previous_response_id=done.id)
        assert thread_of(forked.id) != thread_of(done.id) and REFUNDS == ["4711"]
        assert users(forked.output_text) == [FIRST, "and now?"]  # the answer was a question's, not a turn
