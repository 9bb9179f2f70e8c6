"""Encryption at rest on a real server: the history holds ciphertext only, whoever holds a key
reads the conversation (the client, the CLI, the codec server, the `temporal` CLI through it),
a rotated key keeps decrypting what it encrypted, and a missing key says so in one line."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from google.protobuf.message import Message as ProtoMessage
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_teams.client.connection import connect, encrypted
from durable_teams.client.server_state import pending_questions
from durable_teams.encryption.codec import KEY_ENV, KEY_ID, EncryptionKeyError, codec_for
from durable_teams.encryption.codec_server import serve
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor
from durable_teams.worker.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows import labels
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import binary, running_worker
from .inspect_history import task_failure_messages
from .waiting import pending_question, until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
OLD, NEW = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))
OLD_ONLY, RING = f"old:{OLD}", f"new:{NEW},old:{OLD}"  # rotation: new encrypts, old still decrypts
TASK = "Where is my parcel OCELOT-7731?"
QUESTION = "Which order, IBEX-4410 or the other one?"
HUMAN = "Order number MARMOT-2210"
TOOL_RESULT = "Parcel PANGOLIN-5 is in Lyon"
REASONING = "QUOKKA reasoning about orders"
ANSWER = "Your parcel ZEBRA-88 arrives Friday"
SECRETS = [TASK, QUESTION, HUMAN, TOOL_RESULT, REASONING, ANSWER]


def track_parcel(parcel: str) -> str:
    """Where a parcel is."""
    return TOOL_RESULT


def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    """The router asks a person, then routes (with reasoning, kept in the memo); orders uses a tool."""
    steps = {"router": [call("ask_human", question=QUESTION),
                        say(json.dumps({"target": "orders", "reasoning": REASONING, "confidence": 0.9}))],
             "orders": [call("track_parcel", parcel="MARMOT-2210"), say(ANSWER)]}[req.agent]
    return steps[req.agent_call_index]


def team() -> CompiledTeam:
    return Supervisor([Agent("orders", "Orders.", tools=[track_parcel])], supervisor_name="router",
                      strategy="llm-decision", tools=["ask_human"], name="parcels").compile()


def payloads(message: ProtoMessage) -> Iterator[Payload]:
    """Every Payload anywhere inside a proto message (maps and repeated fields included)."""
    for field, value in message.ListFields():
        values = value.values() if field.message_type and field.message_type.GetOptions().map_entry \
            else value if field.is_repeated else [value]
        for item in values:
            if isinstance(item, Payload):
                yield item
            elif isinstance(item, ProtoMessage):
                yield from payloads(item)


class Parked:
    """A conversation started and parked on ask_human under the old key, then finished by a
    worker holding the rotated key ring."""

    def __init__(self, address: str, task_queue: str, handle: WorkflowHandle, history: History) -> None:
        self.address, self.task_queue, self.handle, self.history = address, task_queue, handle, history


@pytest_asyncio.fixture(scope="module")
async def parked(env: WorkflowEnvironment) -> AsyncIterator[Parked]:
    client = env.client  # no codec: what the server stores, as anyone without a key sees it
    address, task_queue = client.service_client.config.target_host, f"tq-{uuid.uuid4().hex[:8]}"
    compiled, model = team(), ScriptedModel(script)
    old = await connect(address, encryption=OLD_ONLY)
    async with running_worker(old, task_queue, [compiled], model):
        handle = await old.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, task=TASK),
            id=f"parcels-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        question = await pending_question(handle)
        assert question.text == QUESTION
        # the AwaitingHuman search attribute is not encrypted: the CLI still lists the question
        assert (handle.id, question) in await pending_questions(old)
    ring = await connect(address, encryption=RING)
    async with running_worker(ring, task_queue, [compiled], model):
        handle = ring.get_workflow_handle_for(TeamWorkflow.run, handle.id)
        await handle.execute_update(TeamWorkflow.answer,
                                    HumanReply(question_id=question.question_id, text=HUMAN))
        result = await handle.result()
        assert (result.status, result.answer, result.agent) == ("completed", ANSWER, "orders")
        history = (await client.get_workflow_handle(handle.id).fetch_history()).events
        yield Parked(address, task_queue, handle, History(events=history))


async def test_no_message_text_in_the_raw_history(parked: Parked) -> None:
    raw = parked.history.SerializeToString()
    for secret in SECRETS:
        assert secret.encode() not in raw, secret
    key_ids = {p.metadata[KEY_ID] for p in payloads(parked.history) if KEY_ID in p.metadata}
    assert key_ids == {b"old", b"new"}  # parked under the old key, finished under the new one
    # What stays in clear: search attributes (the server indexes them): the AwaitingHuman flag,
    # the team's name (Team; never the task's words) and the ids of `workflow.patched` changes
    # (TemporalChangeVersion); and the SDK's own patch markers, which hold a patch id.
    plain = [p for p in payloads(parked.history) if KEY_ID not in p.metadata]
    flags = {p.data for p in plain if p.metadata.get("type") == b"Bool"}
    patch_ids = {p.data for p in plain if p.metadata.get("type") == b"KeywordList"}
    markers = [json.loads(p.data) for p in plain if "type" not in p.metadata]
    assert flags == {b"true", b"false"}
    assert {p.data for p in plain if p.metadata.get("type") == b"Keyword"} == {
        json.dumps(team().spec.name).encode()}
    assert all(json.loads(ids) and all(isinstance(i, str) for i in json.loads(ids)) for ids in patch_ids)
    # markers: a patch's id, or a local activity's bookkeeping (its type and attempt, no data:
    # its result is a payload of its own, encrypted like any other)
    assert all(set(m) == {"id", "deprecated"} or {"activity_type", "attempt"} <= set(m) for m in markers), markers


async def test_the_key_holder_reads_result_and_transcript(parked: Parked) -> None:
    handle = parked.handle
    assert (await handle.result()).answer == ANSWER
    transcript = " ".join(m.model_dump_json() for m in await handle.query(TeamWorkflow.transcript, True))
    for secret in (TASK, QUESTION, HUMAN, TOOL_RESULT, ANSWER):
        assert secret in transcript, secret


@pytest.mark.parametrize("keys, message", [
    (None, "this conversation is encrypted (key id 'new') and no key is configured"),
    (OLD_ONLY, "key id 'new', which is not among the configured keys (old)"),
    (f"new:{OLD}", "under key id 'new' does not decrypt"),
], ids=["no key", "another key id", "a wrong key"])  # not the random keys: one name in every process
async def test_a_missing_or_wrong_key_is_a_clear_error(parked: Parked, keys: str | None,
                                                       message: str) -> None:
    other = await connect(parked.address, encryption=keys or {})  # {}: no key
    with pytest.raises(EncryptionKeyError) as caught:
        await other.get_workflow_handle(parked.handle.id).result()
    assert message in str(caught.value) and NEW not in str(caught.value)


async def cli(address: str, *args: str, key: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_TEAMS_ENCRYPTION")}
    env.update({"TEMPORAL_ADDRESS": address, **({KEY_ENV: key} if key else {})})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode or 0, out.decode()


async def test_the_cli_reads_with_the_key_and_says_why_not_without(parked: Parked) -> None:
    ring = await connect(parked.address, encryption=RING)  # a worker answers the query
    async with running_worker(ring, parked.task_queue, [team()], ScriptedModel(script)):
        code, out = await cli(parked.address, "transcript", parked.handle.id, key=RING)
        assert code == 0 and ANSWER in out and HUMAN in out, out
        code, out = await cli(parked.address, "transcript", parked.handle.id, key=None)
    assert code == 1, out  # its transcript is rebuilt from its history, which starts under 'old'
    assert out.strip() == (f"durable-teams: this conversation is encrypted (key id 'old') and no "
                           f"key is configured: set {KEY_ENV} or {KEY_ENV}_FILE")


def post(url: str, body: bytes | None = None, method: str = "POST",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.fixture(scope="module")
def codec_server() -> Iterator[str]:
    codec = codec_for(RING)
    server = serve(codec, port=0)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_codec_server_decodes_over_http_with_cors(parked: Parked, codec_server: str) -> None:
    from google.protobuf import json_format
    from temporalio.api.common.v1 import Payloads

    sealed = Payloads(payloads=[p for p in payloads(parked.history) if KEY_ID in p.metadata])
    body = json_format.MessageToJson(sealed).encode()
    origin = {"Origin": "http://localhost:8233", "Content-Type": "application/json",
              "X-Namespace": "default"}
    status, headers, data = post(f"{codec_server}/decode", body, headers=origin)
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://localhost:8233"
    decoded = json_format.Parse(data, Payloads())
    text = b"".join(p.data for p in decoded.payloads)
    for secret in SECRETS:
        assert secret.encode() in text, secret
    # the namespace-prefixed form the `temporal` CLI may template, and /encode back again
    status, _, encoded = post(f"{codec_server}/default/encode", data, headers=origin)
    again = json_format.Parse(post(f"{codec_server}/decode", encoded)[2], Payloads())
    assert status == 200 and again == decoded
    status, headers, _ = post(f"{codec_server}/decode", method="OPTIONS", headers={
        "Origin": "http://localhost:8233", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace"})
    assert status == 204 and "X-Namespace" in headers["Access-Control-Allow-Headers"]
    status, headers, _ = post(f"{codec_server}/decode", body, headers={"Origin": "http://evil.example"})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers
    assert post(f"{codec_server}/other", body)[0] == 404
    status, _, error = post(f"{codec_server}/decode", b'{"payloads": [{"data": 1}]}')
    assert status == 400 and b"message" in error


async def test_temporal_cli_shows_plain_text_through_the_codec_server(parked: Parked, codec_server: str) -> None:
    async def show(*extra: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            binary("temporal"), "workflow", "show", "-w", parked.handle.id, "--address",
            parked.address, "--detailed", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, err.decode()
        return out.decode()

    raw, decoded = await show(), await show("--codec-endpoint", codec_server)
    assert ANSWER not in raw and TASK not in raw
    assert ANSWER in decoded and TASK in decoded and HUMAN in decoded


async def test_failure_messages_are_encrypted_too(env: WorkflowEnvironment, task_queue: str) -> None:
    """A model error quoting the conversation lands in an ActivityTaskFailed event: with the
    codec on, its message moves into encoded attributes, so it is ciphertext as well."""
    secret = "upstream said: WALRUS-3321 is not a valid order"

    def failing(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        raise ApplicationError(secret, non_retryable=True)

    codec_client = await connect(env.client.service_client.config.target_host, encryption=RING)
    workflow_id = f"parcels-{uuid.uuid4().hex[:8]}"
    async with running_worker(codec_client, task_queue, [team()], ScriptedModel(failing)):
        with pytest.raises(WorkflowFailureError) as caught:
            await codec_client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team().spec, task=TASK),
                id=workflow_id, task_queue=task_queue)
    assert str(caught.value.cause) == f"TurnFailed: The model call for router failed: {secret}"
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    failures = [e.activity_task_failed_event_attributes.failure for e in history.events
                if e.HasField("activity_task_failed_event_attributes")]
    failures += [e.workflow_execution_failed_event_attributes.failure for e in history.events
                 if e.HasField("workflow_execution_failed_event_attributes")]
    assert [f.message for f in failures] == ["Encoded failure", "Encoded failure"]
    raw = History(events=history.events).SerializeToString()
    assert secret.encode() not in raw and b"WALRUS" not in raw and TASK.encode() not in raw


@pytest.mark.parametrize("made_by", ["connect", "Client.connect"])
async def test_a_worker_without_the_key_says_why_it_cannot_run_the_conversation(
    env: WorkflowEnvironment, task_queue: str, made_by: str
) -> None:
    """Its workflow task fails with the reason (shown in the Web UI), and the conversation waits
    for a worker that has the key instead of running on garbage, or being ended as malformed
    input: with our `connect()`, and with a client made by `Client.connect` (no codec at all)."""
    address = env.client.service_client.config.target_host
    keyed = await connect(address, encryption=RING)
    keyless = (await connect(address, encryption={}) if made_by == "connect"
               else await Client.connect(address, data_converter=pydantic_data_converter))
    handle = await keyed.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team().spec, task=TASK),
        id=f"parcels-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    async with running_worker(keyless, task_queue, [team()], ScriptedModel(script)):
        failed = await until(lambda: task_failure_messages(env.client.get_workflow_handle(handle.id)),
                             "a workflow task failed")
        status = (await handle.describe()).status
    await handle.terminate("test over")
    assert failed and "encrypted (key id 'new') and no key is configured" in failed[0]
    assert status == WorkflowExecutionStatus.RUNNING


async def test_an_encrypting_client_leaves_the_task_out_of_the_search_attributes(
        env: WorkflowEnvironment) -> None:
    address = env.client.service_client.config.target_host
    keyed, keyless = await connect(address, encryption=RING), await connect(address, encryption={})
    assert encrypted(keyed) and not encrypted(keyless)
    assert labels.conversation_labels("support", TASK, encrypted(keyed)) == TypedSearchAttributes(
        [SearchAttributePair(labels.TEAM, "support")])
    assert labels.conversation_labels("support", TASK, encrypted(keyless)).get(labels.TASK) == TASK
