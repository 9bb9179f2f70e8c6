"""The context-free runner (durable_teams/worker/sandbox_runner.py): a worker whose converter cannot use
a serialization context answers the SDK's context questions without entering the sandbox, and
one whose codec does use them keeps the SDK's runner, so the codec still gets each activity's
context."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
)
from temporalio.worker.workflow_sandbox import _runner as sandbox_runner

from durable_teams.encryption.codec import codec_for, with_codec
from durable_teams.examples.faang import add
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.worker.sandbox_runner import needs_context
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow


class ContextRecordingCodec(PayloadCodec, WithSerializationContext):
    """A codec that changes no byte and records the contexts it was given."""

    def __init__(self, seen: list[SerializationContext | None], context: SerializationContext | None = None):
        self.seen, self.context = seen, context

    def with_context(self, context: SerializationContext) -> ContextRecordingCodec:
        return ContextRecordingCodec(self.seen, context)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.seen.append(self.context)
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


def adder() -> CompiledTeam:
    return Swarm([Agent("clerk", "Adds.", tools=[add])], name="adder").compile()


def model() -> ScriptedModel:
    return ScriptedModel({"clerk": [call("add", a=2, b=3), say("5")]})


async def converse(client: Client, task_queue: str) -> str:
    result = await client.execute_workflow(
        TeamWorkflow.run, ConversationInput(team=adder().spec, task="2+3?"),
        id=f"ctx-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    return result.answer


def test_needs_context_only_for_a_context_aware_codec() -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter

    assert not needs_context(pydantic_data_converter)
    assert not needs_context(with_codec(pydantic_data_converter, codec_for("k1:" + "A" * 43 + "=")))
    assert needs_context(with_codec(pydantic_data_converter, ContextRecordingCodec([])))


async def test_a_conversation_never_enters_the_sandbox_for_a_context(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[object] = []
    original = sandbox_runner._Instance.get_serialization_context
    monkeypatch.setattr(sandbox_runner._Instance, "get_serialization_context",
                        lambda self, info: asked.append(info) or original(self, info))
    async with running_worker(client, task_queue, [adder()], model()):
        assert await converse(client, task_queue) == "5"
    assert asked == []


async def test_a_context_aware_codec_keeps_each_activitys_context(client: Client, task_queue: str) -> None:
    seen: list[SerializationContext | None] = []
    config = client.config()
    config["data_converter"] = with_codec(client.data_converter, ContextRecordingCodec(seen))
    coded = Client(**config)
    async with running_worker(coded, task_queue, [adder()], model()):
        assert await converse(coded, task_queue) == "5"
    activities = {c.activity_type for c in seen if isinstance(c, ActivitySerializationContext)}
    assert {"call_model", "run_tool"} <= activities
