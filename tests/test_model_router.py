"""The model seam: backends take the project's own messages and tool specs, and a worker routes
model names to backends by prefix ("scripted:...", "openai:..."), here the scripted model and
the OpenAI backend (against the fake server) in one team."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.model import ModelActivities, OpenAIBackend
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker import ModelRouter
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelView,
    ToolSpec,
)
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion

pytestmark = pytest.mark.workflow

ADD = ToolSpec(name="add", description="Add.", parameters={"type": "object", "properties": {}})


def request(model: str) -> ModelRequest:
    return ModelRequest(workflow_id="w", run_id="r", agent="calc", model=model, agent_run=0,
                        transcript_length=1, instructions="Add.")


class Recorder:
    """A backend that is not OpenAI-shaped at all: it keeps what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[ModelRequest, list[Message], list[ToolSpec]]] = []

    async def complete(self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec],
                       ) -> ModelResponse:
        self.calls.append((req, messages, tools))
        return ModelResponse(message=say(f"{req.model} saw {len(messages)} message(s)"))


@pytest.mark.parametrize("model,routed,as_name", [
    ("scripted:triage-model", "a", "triage-model"),
    ("other:x:y", "b", "x:y"),
    ("llama3:8b", "default", "llama3:8b"),  # a colon of the model's own name: not a route
    ("gpt-4o-mini", "default", "gpt-4o-mini"),
])
async def test_prefixes_pick_the_backend_and_are_stripped(model: str, routed: str, as_name: str,
                                                          ) -> None:
    backends = {"a": Recorder(), "b": Recorder(), "default": Recorder()}
    router = ModelRouter({"scripted": backends["a"], "other": backends["b"]},
                         default=backends["default"])
    reply = await router.complete(request(model), [Message(role="user", content="hi")], [ADD])
    assert reply.message.content == f"{as_name} saw 1 message(s)"
    assert [name for name, b in backends.items() if b.calls] == [routed]
    req, messages, tools = backends[routed].calls[0]
    assert req.model == as_name and req.instructions == "Add."
    assert messages == [Message(role="user", content="hi")] and tools == [ADD]


async def test_a_name_no_backend_serves_is_a_clear_error() -> None:
    router = ModelRouter({"scripted": Recorder()})
    with pytest.raises(ApplicationError) as caught:
        await router.complete(request("gpt-4o"), [], [])
    assert caught.value.type == "ModelNotRouted" and caught.value.non_retryable
    assert caught.value.message == (
        "No model backend on this worker serves model 'gpt-4o' (agent calc): name it with one "
        "of the prefixes scripted:, or give the worker a default backend.")


async def test_the_activity_hands_backends_the_projects_own_types() -> None:
    async def view(req: ModelRequest) -> ModelView:
        return ModelView(messages=[Message(role="user", content="1+2?")], tools=[ADD])

    backend = Recorder()
    reply = await ActivityEnvironment().run(ModelActivities(backend, view).call_model,
                                            request("m"))
    assert reply.message.content == "m saw 1 message(s)" and reply.message.name == "calc"
    _, messages, tools = backend.calls[0]
    assert messages == [Message(role="user", content="1+2?")] and tools == [ADD]


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def test_one_team_two_backends(client: Client, task_queue: str) -> None:
    team = Swarm([
        Agent("triage", "Route the user.", handoffs=["calc"], model="scripted:router"),
        Agent("calc", "You add numbers.", tools=[add], model="openai:test-model"),
    ]).compile()
    scripted = ScriptedModel({"triage": [call("transfer_to_calc")]})
    with FakeOpenAI() as fake:
        fake.reply(completion(tool_calls=[("add", '{"a": 1, "b": 2}')]))
        fake.reply(completion("3"))
        router = ModelRouter({"scripted": scripted,
                              "openai": OpenAIBackend(base_url=fake.base_url, api_key="k-test")})
        async with running_worker(client, task_queue, [team], router):
            result = await client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task="1+2?"),
                id=f"router-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    assert (result.answer, result.agent) == ("3", "calc")
    assert [r[0].model for r in scripted.requests] == ["router"]
    assert [body["model"] for body in fake.requests] == ["test-model", "test-model"]
    assert fake.requests[0]["messages"][0] == {"role": "system", "content": "You add numbers."}
    assert fake.requests[1]["messages"][-1]["content"] == "3.0"
