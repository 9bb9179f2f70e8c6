"""A namespace without our search attributes (or with one of the wrong type) never wedges a
conversation: on a dev server of its own started with none registered, a worker made with the
public `build_worker` that may not register them says in one line what is missing, and
conversations started with the raw Temporal client end with their answers."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from durable_teams.client.server_state import pending_questions
from durable_teams.client.start import start_conversation
from durable_teams.examples import faang, support
from durable_teams.gateway.core.threads import Gateway
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.search_attributes import learn_labels
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, HumanReply, Question

from .conftest import binary, running_worker
from .waiting import NotYet, until

pytestmark = pytest.mark.workflow

BOOL, KEYWORD, TEXT = (IndexedValueType.INDEXED_VALUE_TYPE_BOOL, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
                       IndexedValueType.INDEXED_VALUE_TYPE_TEXT)
NAMESPACES = {
    "no-team": {"AwaitingHuman": BOOL, "Task": KEYWORD},  # what the previous release asked for
    "no-awaiting": {"Team": KEYWORD, "Task": KEYWORD},
    "no-task": {"AwaitingHuman": BOOL, "Team": KEYWORD},
    "team-as-text": {"AwaitingHuman": BOOL, "Team": TEXT, "Task": KEYWORD},
    "none": {},
}


@pytest_asyncio.fixture(scope="module")
async def bare_server() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of this module's own, none of our attributes registered, one namespace per case."""
    extra = [arg for name in NAMESPACES for arg in ("--namespace", name)]
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal"),
        search_attributes=[], dev_server_extra_args=extra,
    ) as environment:
        for namespace, attributes in NAMESPACES.items():
            if attributes:
                await environment.client.operator_service.add_search_attributes(
                    AddSearchAttributesRequest(namespace=namespace, search_attributes=attributes))
        yield environment


async def refusing_client(env: WorkflowEnvironment, namespace: str) -> Client:
    """A client on `namespace` whose registrations are refused, as a managed namespace does."""
    client = await Client.connect(env.client.service_client.config.target_host, namespace=namespace,
                                  data_converter=pydantic_data_converter)

    async def refused(*_args: object, **_kwargs: object) -> None:
        raise RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")

    client.operator_service.add_search_attributes = refused  # type: ignore[method-assign]
    return client


@pytest.mark.parametrize("namespace", list(NAMESPACES))
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_faang_conversation_ends_whatever_the_namespace_lacks(
        bare_server: WorkflowEnvironment, namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    client = await refusing_client(bare_server, namespace)
    compiled = faang.build().compile()
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    with caplog.at_level(logging.WARNING, logger="durable_teams.worker.search_attributes"):
        async with running_worker(client, queue, [compiled], ScriptedModel(faang.SCRIPT)):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION),
                id=f"faang-{uuid.uuid4().hex[:8]}", task_queue=queue)
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.status == "completed" and result.answer == faang.ANSWER
    lines = [r.getMessage() for r in caplog.records if "search attributes not usable" in r.getMessage()]
    assert len(lines) <= 1
    labels = (await handle.describe()).typed_search_attributes
    has_team = NAMESPACES[namespace].get("Team") == KEYWORD
    assert [p.key.name for p in labels if p.key.name == "Team"] == (["Team"] if has_team else [])


@pytest.mark.parametrize("namespace", ["team-as-text", "no-awaiting", "none"])
async def test_the_worker_says_what_is_missing_in_one_line(bare_server: WorkflowEnvironment, namespace: str) -> None:
    have, line = await learn_labels(await refusing_client(bare_server, namespace))
    expected = {n for n, k in NAMESPACES[namespace].items() if (k == BOOL) == (n == "AwaitingHuman") and k != TEXT}
    assert have == expected and line is not None and "\n" not in line
    if namespace == "team-as-text":
        assert "Team (registered as Text, not Keyword)" in line
    if namespace == "no-awaiting":
        assert line.endswith(
            "to add: temporal operator search-attribute create --namespace no-awaiting --name AwaitingHuman --type Bool")
    assert ("could not register: Request unauthorized." in line) == (namespace != "team-as-text")


async def test_a_listing_refused_is_taken_as_none(bare_server: WorkflowEnvironment) -> None:
    client = await refusing_client(bare_server, "no-task")

    async def refused(*_args: object, **_kwargs: object) -> None:
        raise RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")

    client.operator_service.list_search_attributes = refused  # type: ignore[method-assign]
    have, line = await learn_labels(client)
    assert have == frozenset() and line is not None and "listing refused: Request unauthorized." in line


async def test_questions_are_listed_and_answered_without_awaiting_human(bare_server: WorkflowEnvironment) -> None:
    client = await refusing_client(bare_server, "no-awaiting")
    support.REFUNDS.clear()
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="support", task=support.QUESTION),
            id=f"support-{uuid.uuid4().hex[:8]}", task_queue=queue)
        for qid, reply in (("q1", {"text": "Order 4711"}), ("q2", {"approved": True})):
            async def listed_questions(qid: str = qid) -> list[Question]:
                # visibility shows them once the task is done, and may still show the one before
                listed = [q for wid, q in await pending_questions(client) if wid == handle.id]
                if [q.question_id for q in listed] != [qid]:
                    raise NotYet([q.question_id for q in listed])
                return listed
            await until(listed_questions, f"{qid} listed alone")
            inbox = [q for q in await Gateway(client, queue).pending() if q["thread_id"] == handle.id]
            assert [(q["question_id"], q["team"]) for q in inbox] == [(qid, None)]  # no memo team: raw start
            await handle.execute_update(TeamWorkflow.answer, HumanReply(question_id=qid, **reply))  # type: ignore[arg-type]
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.answer == support.ANSWER
    assert support.REFUNDS == [("item_132612938", "fell apart after a week")]


@pytest.mark.parametrize("namespace", ["no-task", "no-team", "none"])
async def test_our_clients_start_with_the_labels_the_namespace_has(bare_server: WorkflowEnvironment,
                                                                  namespace: str) -> None:
    client = await refusing_client(bare_server, namespace)
    handle = await start_conversation(client, "faang", ConversationInput(team_name="faang", task="how many?"),
                                      id=f"start-{uuid.uuid4().hex[:8]}", task_queue="nobody")
    labels = {p.key.name: p.value for p in (await handle.describe()).typed_search_attributes}
    await handle.terminate()
    assert labels == {k: v for k, v in {"Team": "faang", "Task": "how many?"}.items() if k in NAMESPACES[namespace]}
