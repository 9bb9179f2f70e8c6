"""Whole conversations against a hostile endpoint: what a user sees when the model misbehaves.

A worker with the real `OpenAIBackend` on the dev server, a team with small model-call limits
(`ModelCalls`), and the hostile fake server: each failure class ends the turn as `failed` with a
readable message after a bounded number of requests, and the conversation goes on.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_teams.activities.model import OpenAIBackend
from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelCalls
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion
from .hostile_openai import ECHOED, HOSTILE, OWN_KEY

pytestmark = pytest.mark.workflow

RUNS: list[str] = []
FAILED = "The model call for calc failed: "


def add(a: float, b: float) -> float:
    """Add two numbers."""
    RUNS.append(f"{a}+{b}")
    return a + b


def team(attempts: int = 2, timeout: float = 2.0, total: float = 30.0) -> CompiledTeam:
    limits = ModelCalls(timeout_seconds=timeout, max_attempts=attempts,
                        total_timeout_seconds=total, retry_interval_seconds=0.1)
    return Swarm([Agent("calc", "You add numbers.", tools=[add], model="test-model")],
                 model_calls=limits).compile()


@asynccontextmanager
async def conversation(client: Client, task_queue: str, fake: FakeOpenAI,
                       compiled: CompiledTeam) -> AsyncIterator[WorkflowHandle]:
    backend = OpenAIBackend(base_url=fake.base_url, api_key=OWN_KEY)
    async with running_worker(client, task_queue, [compiled], backend):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False),
            id=f"hostile-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        try:
            yield handle
        finally:
            await handle.terminate("test over")


def queue(fake: FakeOpenAI, *modes: str) -> None:
    for mode in modes:
        fake.raw(HOSTILE[mode]({}))


@pytest.mark.parametrize("modes,requests,says", [
    (["html"], 1, "The model endpoint sent a response that is not JSON (text/html). Server "
                  "said: 502 Bad Gateway 502 Bad Gateway The upstream model server did not "
                  "answer. nginx/1.25"),
    (["empty", "null_content"], 2, "The model 'test-model' gave calc an empty answer (no text "
                                   "and no tool calls; finish_reason 'stop'). It was asked twice."),
    (["truncated", "truncated"], 2, "The model endpoint sent truncated or invalid JSON"),
    (["error_200"], 1, "The model endpoint answered HTTP 200 with an error. Server said: The "
                       "engine is currently overloaded."),
    (["echo_401"], 1, "The model endpoint rejected the credentials (HTTP 401). Check "
                      "OPENAI_API_KEY on the worker. Server said: Bad key. Request headers: "
                      "authorization: *** cookie: *** x-api-key: *** api-key: *** key: sk-***"),
])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_bad_reply_fails_the_turn_readably_and_the_conversation_goes_on(
        client: Client, task_queue: str, modes: list[str], requests: int, says: str) -> None:
    with FakeOpenAI() as fake:
        queue(fake, *modes)
        async with conversation(client, task_queue, fake, team()) as handle:
            reply = await send_turn(client, handle.id, "What is 1+2?")
            assert reply.status == "failed" and reply.agent == "calc"
            assert reply.text.startswith(FAILED + says)
            assert len(fake.requests) == requests
            fake.reply(completion("It is 3."))
            again = await send_turn(client, handle.id, "Try again?")
            assert (again.status, again.text) == ("completed", "It is 3.")
            history = (await handle.fetch_history()).to_json()
            for secret in (*ECHOED, OWN_KEY):
                assert secret not in history


async def test_parts_and_object_arguments_complete_with_one_tool_run(
        client: Client, task_queue: str) -> None:
    RUNS.clear()
    with FakeOpenAI() as fake:
        queue(fake, "args_object", "parts")
        async with conversation(client, task_queue, fake, team()) as handle:
            reply = await send_turn(client, handle.id, "What is 1+2?")
            assert (reply.status, reply.text) == ("completed", "Hello, world.")
            assert RUNS == ["1.0+2.0"]
            assert fake.requests[1]["messages"][-1] == {
                "role": "tool", "tool_call_id": "c1", "content": "3.0"}


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_server_error_in_a_200_is_retried_up_to_the_budget(
        client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        queue(fake, "error_200_code_503", "error_200_code_503", "error_200_code_503")
        async with conversation(client, task_queue, fake, team(attempts=3)) as handle:
            reply = await send_turn(client, handle.id, "What is 1+2?")
            assert reply.status == "failed"
            assert reply.text == (FAILED + "The model endpoint answered HTTP 200 with an error "
                                  "(code 503). Server said: No instances available (gave up "
                                  "after 3 attempts).")
            assert len(fake.requests) == 3


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_hung_endpoint_fails_a_one_shot_run_within_the_limits(
        client: Client, task_queue: str) -> None:
    compiled = team(attempts=2, timeout=2.0)
    with FakeOpenAI() as fake:
        queue(fake, "hang", "hang")
        backend = OpenAIBackend(base_url=fake.base_url, api_key=OWN_KEY)
        async with running_worker(client, task_queue, [compiled], backend):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, task="1+2?"),
                id=f"hang-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            with pytest.raises(WorkflowFailureError) as caught:
                await handle.result()
        cause = caught.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == "TurnFailed"
        assert cause.message.startswith(FAILED)
        # The request is cut just before the attempt's deadline; on a loaded machine Temporal's
        # own timeout may come first. Either way the user reads the limit, after two requests.
        assert ("did not answer within 1.8 s" in cause.message
                or "no answer within the model-call time limits (2 s per attempt, 2 attempts"
                in cause.message), cause.message
        assert len(fake.requests) == 2


@pytest.mark.slow  # over a second: out of the quick loop
async def test_the_total_bound_ends_a_call_that_still_has_attempts_left(
        client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        queue(fake, "hang", "hang", "hang", "hang", "hang")
        async with conversation(client, task_queue, fake, team(5, 2.0, total=3.0)) as handle:
            reply = await send_turn(client, handle.id, "What is 1+2?")
            assert reply.status == "failed"
            assert reply.text.startswith(FAILED + "no answer within the model-call time limits "
                                         "(2 s per attempt, 5 attempts, 3 s in all)."), reply.text
            assert len(fake.requests) < 5  # the total bound, not the attempts, ended it
