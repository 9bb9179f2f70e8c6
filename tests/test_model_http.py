"""The model activity through the real openai client, against a fake endpoint on 127.0.0.1."""

from __future__ import annotations

import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError

from durable_teams.activities.model import OpenAIBackend
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion

pytestmark = pytest.mark.workflow

SECRET = "sk-test-secret-do-not-log"


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


TEAM = Swarm([Agent("calculator", "You add numbers.", tools=[add], model="test-model")]).compile()


async def ask(client: Client, task_queue: str, fake: FakeOpenAI, question: str = "1+2?"):
    backend = OpenAIBackend(base_url=fake.base_url, api_key=SECRET)
    async with running_worker(client, task_queue, [TEAM], backend):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, task=question),
            id=f"http-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        try:
            return handle, await handle.result(), None
        except WorkflowFailureError as err:
            return handle, None, err


@pytest.mark.slow  # over a second: out of the quick loop
async def test_rate_limit_is_retried_after_the_servers_delay(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(429, "slow down", {"retry-after-ms": "300"})
        fake.reply(completion("3"))
        handle, result, _ = await ask(client, task_queue, fake)
        assert result is not None and result.answer == "3"
        assert len(fake.requests) == 2
        history = await handle.fetch_history()
        model_calls = {e.event_id for e in history.events
                       if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                       and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"}
        started = [e.activity_task_started_event_attributes.attempt for e in history.events
                   if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
                   and e.activity_task_started_event_attributes.scheduled_event_id in model_calls]
        assert started == [2]  # the retry is in the history: attempt 2 succeeded


async def test_bad_credentials_fail_at_once_with_a_readable_error(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.error(401, "Incorrect API key provided")
        _, result, err = await ask(client, task_queue, fake)
        assert result is None and err is not None
        assert len(fake.requests) == 1  # not retried
        message = str(err.cause)
        assert "HTTP 401" in message and "OPENAI_API_KEY" in message
        assert SECRET not in message
        assert {k.lower(): v for k, v in fake.headers[0].items()}["authorization"] == f"Bearer {SECRET}"  # the key went to the server only


async def test_malformed_tool_arguments_come_back_to_the_model(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.reply(completion(tool_calls=[("add", '{"a": 1, "b": ')]))
        fake.reply(completion(tool_calls=[("add", '{"a": 1, "b": 2}')]))
        fake.reply(completion("3"))
        _, result, _ = await ask(client, task_queue, fake)
        assert result is not None and result.answer == "3"
        second = fake.requests[1]["messages"]
        error = second[-1]
        assert error["role"] == "tool"
        assert error["content"].startswith("Error: Invalid JSON in arguments for tool 'add'")
        assert second[-2]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": '
        assert fake.requests[2]["messages"][-1]["content"] == "3.0"


async def test_request_shape_is_chat_completions_with_tools(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.reply(completion("hello"))
        await ask(client, task_queue, fake, "hi")
        body = fake.requests[0]
        assert body["model"] == "test-model"
        assert body["messages"] == [
            {"role": "system", "content": "You add numbers."},
            {"role": "user", "content": "hi"},
        ]
        assert body["tools"][0]["function"]["name"] == "add"


@pytest.mark.parametrize("status,retryable", [(400, False), (403, False), (404, False), (422, False),
                                              (408, True), (409, True), (500, True), (503, True)])
def test_status_mapping(status: int, retryable: bool) -> None:
    import openai

    try:  # newer openai releases ship their HTTP client as httpx2
        import httpx2 as httpx
    except ImportError:
        import httpx  # type: ignore[no-redef]
    from temporalio.exceptions import ApplicationError

    from durable_teams.activities.model_errors import raise_for_openai_error

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, request=request, headers={"retry-after": "2"},
                              json={"error": {"message": "boom"}})
    error = openai.APIStatusError("boom", response=response, body={"error": {"message": "boom"}})
    with pytest.raises(ApplicationError) as caught:
        raise_for_openai_error(error, "m")
    assert caught.value.non_retryable is (not retryable)
    assert "boom" in caught.value.message
    if retryable:
        assert caught.value.next_retry_delay is not None
        assert caught.value.next_retry_delay.total_seconds() == 2
