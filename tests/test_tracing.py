"""OpenTelemetry: one conversation gives one trace with GenAI spans (an `invoke_agent` span per
agent run, holding its `chat` and `execute_tool` spans, a `handoff` span per transfer) and the
GenAI client metrics, and never a duplicate span on replay."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_teams.activities import call_facts
from durable_teams.activities.model import OpenAIBackend
from durable_teams.activities.model_stream import StreamAssembler
from durable_teams.activities.view_cache import ViewCache
from durable_teams.examples import faang_teams
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.tracing.interceptors import tracing_interceptors
from durable_teams.worker.scripted import call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion
from .teams import TOKENS, MeteredModel

pytestmark = pytest.mark.workflow


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def traced_client(client: Client) -> tuple[Client, InMemorySpanExporter]:
    """A client (and so its workers) tracing into an in-memory exporter of its own."""
    traced, exporter, _ = metered_client(client)
    return traced, exporter


def metered_client(client: Client) -> tuple[Client, InMemorySpanExporter, InMemoryMetricReader]:
    """A client tracing into an in-memory exporter and metering into an in-memory reader."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    interceptors = tracing_interceptors(provider.get_tracer("test"), meter)
    return Client(**{**client.config(), "interceptors": interceptors}), exporter, reader


def nested(spans: Iterable[ReadableSpan], parent_of: Callable[[ReadableSpan], int | None]) -> list[Any]:
    """`spans` as a nested list of names under `parent_of` each, children in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        by_parent.setdefault(parent_of(s), []).append(s)

    def build(parent: int | None) -> list[Any]:
        out: list[Any] = []
        for s in by_parent.get(parent, []):
            children = build(s.context.span_id)
            out.append([s.name, children] if children else s.name)
        return out

    return build(None)


def tree(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    """Spans as a nested list of names, children in start order."""
    ids = {s.context.span_id for s in spans}
    return nested(spans, lambda s: s.parent.span_id if s.parent and s.parent.span_id in ids else None)


GENAI = ("invoke_agent ", "chat ", "execute_tool ", "handoff")


def genai_tree(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    """Only the GenAI spans, each under its nearest GenAI ancestor (Temporal's spans between
    them left out), children in start order."""
    by_id = {s.context.span_id: s for s in spans}

    def genai_parent(s: ReadableSpan) -> int | None:
        parent = s.parent.span_id if s.parent else None
        while parent in by_id and not by_id[parent].name.startswith(GENAI):
            grand = by_id[parent].parent
            parent = grand.span_id if grand else None
        return parent if parent in by_id else None

    return nested((s for s in spans if s.name.startswith(GENAI)), genai_parent)


def histograms(reader: InMemoryMetricReader) -> dict[str, list[HistogramDataPoint]]:
    """Metric name -> its data points (histograms only)."""
    data = reader.get_metrics_data()
    assert data is not None
    return {m.name: list(m.data.data_points)  # type: ignore[misc]
            for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


QUERY = ["QueryWorkflow:model_view_delta", ["HandleQuery:model_view_delta"]]


async def test_one_conversation_gives_one_trace_with_genai_spans(client: Client, task_queue: str) -> None:
    traced, exporter = traced_client(client)
    team = Swarm([Agent("solo", tools=[add], model="m")], name="traced").compile()
    model = MeteredModel({"solo": [call("add", a=2, b=3), say("5")]})
    # No workflow cache: every workflow task replays the history so far, so a span made on
    # replay would show up here as a duplicate. Views read by query, every time (whether an
    # evicted instance's view is still offered when the call starts is a race).
    result_id = f"traced-{uuid.uuid4().hex[:6]}"
    async with running_worker(traced, task_queue, [team], model, max_cached_workflows=0,
                              view_reader=ViewCache(live=False).read):
        result = await traced.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="2+3?"),
            id=result_id, task_queue=task_queue)
    assert result.answer == "5"
    spans = exporter.get_finished_spans()
    # Temporal's interceptor parents a workflow's spans under the span that started it (its
    # RunWorkflow span is a zero-length marker); the agent run's span holds what it scheduled,
    # and ours nest in each activity's run.
    assert tree(spans) == [
        ["StartWorkflow:TeamWorkflow", [
            "RunWorkflow:TeamWorkflow",
            # the conversation asks which search attributes the namespace has
            ["StartActivity:available_labels", ["RunActivity:available_labels"]],
            ["invoke_agent solo", [
                ["StartActivity:call_model", [["RunActivity:call_model", [["chat m", [QUERY]]]]]],
                ["StartActivity:run_tool", [["RunActivity:run_tool", ["execute_tool add"]]]],
                # read elsewhere than in process: the next call goes to the worker's own queue
                ["StartActivity:worker_task_queue", ["RunActivity:worker_task_queue"]],
                ["StartActivity:call_model", [["RunActivity:call_model", [["chat m", [QUERY]]]]]],
            ]],
            "CompleteWorkflow:TeamWorkflow",
        ]],
    ]
    assert len({s.context.trace_id for s in spans}) == 1  # one trace for the conversation
    (agent_span,) = [s for s in spans if s.name == "invoke_agent solo"]
    assert agent_span.kind == SpanKind.INTERNAL
    assert dict(agent_span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "solo",
        "gen_ai.conversation.id": result_id, "gen_ai.request.model": "m",
        "durable_teams.team": "traced", "durable_teams.agent_run": 0}
    chat_spans = [s for s in spans if s.name == "chat m"]
    # the agent run lasts from before its first call to after its last
    assert agent_span.start_time <= min(s.start_time for s in chat_spans)  # type: ignore[operator,type-var]
    assert agent_span.end_time >= max(s.end_time for s in chat_spans)  # type: ignore[operator,type-var]
    assert [s.kind for s in chat_spans] == [SpanKind.CLIENT] * 2
    assert [dict(s.attributes or {}) for s in chat_spans] == [{
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.agent.name": "solo",
        "gen_ai.conversation.id": result_id, "gen_ai.provider.name": "durable_teams.scripted",
        "gen_ai.response.model": "m", "gen_ai.response.id": f"scripted-solo-{n}",
        "gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 40,
        "gen_ai.response.finish_reasons": (reason,),
    } for n, reason in enumerate(("tool_calls", "stop"))]
    (tool_span,) = [s for s in spans if s.name == "execute_tool add"]
    assert tool_span.kind == SpanKind.INTERNAL
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.type": "function",
        "gen_ai.agent.name": "solo", "gen_ai.tool.call.id": "call_solo_0_0"}
    # replaying the whole history makes no span at all
    history = await traced.get_workflow_handle(result_id).fetch_history()
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter,
                        interceptors=traced.config()["interceptors"])
    await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert len(exporter.get_finished_spans()) == len(spans)


@pytest.mark.slow  # over a second: out of the quick loop
async def test_team_of_teams_gives_agent_spans_handoffs_and_metrics(client: Client, task_queue: str) -> None:
    traced, exporter, reader = metered_client(client)
    team = faang_teams.build(model="m").compile()
    async with running_worker(traced, task_queue, [team], MeteredModel(faang_teams.SCRIPT)):
        await traced.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=faang_teams.QUESTION),
            id=f"traced-nested-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1  # child workflows' spans too
    # A nested team's agent run in the parent holds its child workflow's agent runs.
    assert genai_tree(spans) == [
        ["invoke_agent top_supervisor", ["chat m", "handoff"]],
        ["invoke_agent research_team", [
            ["invoke_agent research_team", ["chat m", "handoff"]],
            ["invoke_agent research_expert", ["chat m", "execute_tool web_search", "chat m"]],
            ["invoke_agent research_team", ["chat m"]],
        ]],
        ["invoke_agent top_supervisor", ["chat m", "handoff"]],
        ["invoke_agent math_team", [
            ["invoke_agent math_team", ["chat m", "handoff"]],
            ["invoke_agent math_expert", ["chat m", "execute_tool add"] * 4 + ["chat m"]],
            ["invoke_agent math_team", ["chat m"]],
        ]],
        ["invoke_agent top_supervisor", ["chat m"]],
    ]
    handoffs = [dict(s.attributes or {}) for s in sorted(spans, key=lambda s: s.start_time or 0)
                if s.name == "handoff"]
    assert [(h["gen_ai.agent.name"], h["durable_teams.handoff.source_agent"],
             h["durable_teams.handoff.target_agent"], h["gen_ai.tool.name"]) for h in handoffs] == [
        ("top_supervisor", "top_supervisor", "research_team", "transfer_to_research_team"),
        ("research_team", "research_team", "research_expert", "transfer_to_research_expert"),
        ("top_supervisor", "top_supervisor", "math_team", "transfer_to_math_team"),
        ("math_team", "math_team", "math_expert", "transfer_to_math_expert"),
    ]
    # the metrics: one data point per token type, one call per model call (14), the sums of
    # the scripted usage
    calls = {"top_supervisor": 3, "research_team": 2, "math_team": 2, "research_expert": 2, "math_expert": 5}
    metrics = histograms(reader)
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "durable_teams.scripted",
            "gen_ai.request.model": "m", "gen_ai.response.model": "m"}
    assert [(dict(p.attributes or {}), p.count, p.sum) for p in metrics["gen_ai.client.token.usage"]] == [
        ({**base, "gen_ai.token.type": "input"}, 14, sum(n * TOKENS[a][0] for a, n in calls.items())),
        ({**base, "gen_ai.token.type": "output"}, 14, sum(n * TOKENS[a][1] for a, n in calls.items())),
    ]
    (duration,) = metrics["gen_ai.client.operation.duration"]
    assert (dict(duration.attributes or {}), duration.count) == (base, 14)
    assert 0 < duration.sum < 60


async def test_chat_spans_name_the_endpoint_and_the_response(client: Client, task_queue: str) -> None:
    """Through the openai client to an endpoint: provider, server, response id and model."""
    traced, exporter, reader = metered_client(client)
    team = Swarm([Agent("solo", model="test-model")], name="traced-http").compile()
    with FakeOpenAI() as fake:
        fake.reply(completion("3", model="test-model-2024"))
        port = int(fake.base_url.split(":")[2].split("/")[0])
        async with running_worker(traced, task_queue, [team], OpenAIBackend(base_url=fake.base_url)):
            await traced.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task="1+2?"),
                id=f"traced-http-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat test-model"]
    attributes = dict(chat.attributes or {})
    endpoint = {"gen_ai.provider.name": "openai", "server.address": "127.0.0.1", "server.port": port,
                "gen_ai.response.model": "test-model-2024"}
    assert {k: attributes.get(k) for k in [*endpoint, "gen_ai.response.id"]} == {
        **endpoint, "gen_ai.response.id": "chatcmpl-test"}
    (tokens_in, tokens_out) = histograms(reader)["gen_ai.client.token.usage"]
    assert dict(tokens_in.attributes or {}) == {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model", **endpoint,
        "gen_ai.token.type": "input"}
    assert (tokens_in.sum, tokens_out.sum) == (11, 7)


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


async def test_a_tool_error_marks_its_span(client: Client, task_queue: str) -> None:
    traced, exporter = traced_client(client)
    team = Swarm([Agent("solo", tools=[explode], model="m")], name="traced-error").compile()
    model = MeteredModel({"solo": [call("explode", reason="boom"), say("It failed.")]})
    async with running_worker(traced, task_queue, [team], model):
        await traced.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="go"),
            id=f"traced-error-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool explode"]
    assert (span.attributes or {})["error.type"] == "tool_error"
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "Error: RuntimeError: boom"


async def test_a_failed_model_call_marks_its_span_and_duration(client: Client, task_queue: str) -> None:
    traced, exporter, reader = metered_client(client)
    team = Swarm([Agent("solo", model="test-model")], name="traced-auth").compile()
    with FakeOpenAI() as fake:
        fake.error(401, "Incorrect API key provided")  # not retried: one attempt
        async with running_worker(traced, task_queue, [team], OpenAIBackend(base_url=fake.base_url)):
            with pytest.raises(WorkflowFailureError):
                await traced.execute_workflow(
                    TeamWorkflow.run, ConversationInput(team=team.spec, task="1+2?"),
                    id=f"traced-auth-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat test-model"]
    assert (chat.attributes or {})["error.type"] == "ModelAuthError"
    assert chat.status.status_code == StatusCode.ERROR
    metrics = histograms(reader)
    (duration,) = metrics["gen_ai.client.operation.duration"]
    assert ((duration.attributes or {})["error.type"], duration.count) == ("ModelAuthError", 1)
    assert "gen_ai.client.token.usage" not in metrics  # no usage reported, none made up
    (agent,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent solo"]
    assert (agent.attributes or {})["error.type"] == "TurnFailed"


def test_a_streamed_completion_keeps_its_id_and_model() -> None:
    """A streamed call's chunks name the response; the assembled body keeps them for the span."""
    assembler = StreamAssembler()
    for chunk in ({"id": "chatcmpl-s", "model": "m-2024", "choices": [{"delta": {"content": "Hi"}}]},
                  {"id": "chatcmpl-s", "model": "m-2024", "choices": [{"delta": {}, "finish_reason": "stop"}]}):
        assembler.feed(chunk)
    with call_facts.collecting() as facts:
        call_facts.note_response(assembler.completion())
    assert facts == {"gen_ai.response.id": "chatcmpl-s", "gen_ai.response.model": "m-2024"}


async def test_a_responses_api_call_is_traced_like_a_chat_completion(client: Client, task_queue: str) -> None:
    """`api="responses"`: the same chat span, its response id and model, its token counts."""
    from .fake_openai import response_body

    traced, exporter, reader = metered_client(client)
    team = Swarm([Agent("solo", model="test-model", api="responses")], name="traced-responses").compile()
    with FakeOpenAI() as fake:
        fake.reply(response_body("3", model="test-model-2025"))
        async with running_worker(traced, task_queue, [team], OpenAIBackend(base_url=fake.base_url)):
            await traced.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task="1+2?"),
                id=f"traced-responses-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
    assert fake.paths == ["/v1/responses"]
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat test-model"]
    attributes = dict(chat.attributes or {})
    assert (attributes["gen_ai.response.id"], attributes["gen_ai.response.model"]) == ("resp_test", "test-model-2025")
    (tokens_in, tokens_out) = histograms(reader)["gen_ai.client.token.usage"]
    assert (tokens_in.sum, tokens_out.sum) == (13, 5)
