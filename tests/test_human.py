"""ask_human and tool approval: questions held in workflow state, answered by signal or update."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.cli.console import format_question
from durable_teams.client.server_state import pending_questions
from durable_teams.examples import support
from durable_teams.worker.scripted import ScriptedModel, call, calls, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, HumanReply

from .conftest import binary, running_worker
from .waiting import asked, questions, until

pytestmark = pytest.mark.workflow


async def start(client: Client, task_queue: str, **input_options: object) -> WorkflowHandle:
    spec = support.build().compile().spec
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=spec, task=support.QUESTION, **input_options),  # type: ignore[arg-type]
        id=f"support-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def answer(handle: WorkflowHandle, **reply: object) -> None:
    await handle.execute_update(TeamWorkflow.answer, HumanReply(**reply))  # type: ignore[arg-type]


async def test_question_then_approval_then_answer(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        handle = await start(client, task_queue)
        await until(lambda: asked(handle, "q1"))
        (q,) = await questions(handle)
        assert q.text == "Sorry to hear that! What's your order number?"
        assert q.agent == "triage_agent" and q.suggestions == ["I don't have it"]
        # listed across conversations through the search attribute, readable by a person
        listed = await pending_questions(client)
        assert (handle.id, q) in listed
        text = format_question(handle.id, q)
        assert "Question: Sorry to hear that!" in text and "{" not in text
        # the update rejects bad answers before anything is written
        for bad, reason in ((dict(question_id="q9", text="x"), "no pending question 'q9'"),
                            (dict(question_id="q1", text="  "), "the answer text is empty")):
            with pytest.raises(WorkflowUpdateFailedError) as caught:
                await answer(handle, **bad)
            assert reason in str(caught.value.cause)
        await answer(handle, question_id="q1", text="Order 4711")
        with pytest.raises(WorkflowUpdateFailedError) as caught:
            await answer(handle, question_id="q1", text="again")
        assert "already answered" in str(caught.value.cause)
        await handle.signal(TeamWorkflow.human_reply, HumanReply(question_id="q1", text="stale"))
        # next: the refund waits for approval, and has not run
        await until(lambda: asked(handle, "q2"))
        (approval,) = await questions(handle)
        assert approval.kind == "approval" and approval.tool == "execute_refund"
        assert support.REFUNDS == []
        await answer(handle, question_id="q2", approved=True)
        result = await handle.result()
        status = await handle.query(TeamWorkflow.status)
        transcript = await handle.query(TeamWorkflow.transcript, True)
    assert result.answer == support.ANSWER
    assert support.REFUNDS == [("item_132612938", "fell apart after a week")]
    assert [r.text for r in status.ignored_replies] == ["stale"]
    assert "Order 4711" in [m.content for m in transcript]
    assert [m.content for m in transcript].count("Order 4711") == 1


async def test_denied_tool_never_runs_and_the_model_hears_why(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        handle = await start(client, task_queue)
        await until(lambda: asked(handle, "q1"))
        await handle.signal(TeamWorkflow.human_reply, HumanReply(question_id="q1", text="4711"))
        await until(lambda: asked(handle, "q2"))
        await answer(handle, question_id="q2", approved=False, text="store credit instead")
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, True)
    assert support.REFUNDS == []
    assert "The user denied execute_refund: store credit instead. It was not run." in [m.content for m in transcript]
    # what the agents say next follows what happened: nobody claims the refund was made
    replies = [m.content for m in transcript if m.role == "assistant" and m.content]
    assert f"{support.NOT_REFUNDED}: the refund was not approved." in replies
    assert "Done: your boots are refunded." not in replies and replies[-1] == support.DENIED_ANSWER
    assert result.answer == support.DENIED_ANSWER and "on its way" not in result.answer


async def test_two_questions_at_once_answered_in_either_order(client: Client, task_queue: str) -> None:
    script = {"triage_agent": [
        calls(("ask_human", {"question": "Order number?"}), ("ask_human", {"question": "Email?"})),
        say("Thanks"),
    ]}
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(script)):
        handle = await start(client, task_queue)
        await until(lambda: _count(handle, 2))
        await answer(handle, question_id="q2", text="a@b.c")
        await answer(handle, question_id="q1", text="4711")
        await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript)
    assert [m.content for m in transcript if m.role == "tool"] == ["4711", "a@b.c"]


async def _count(handle: WorkflowHandle, n: int) -> bool:
    return len(await questions(handle)) == n


async def test_a_day_long_timeout_resolves_on_the_time_skipping_server() -> None:
    async with await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=binary("temporal-test-server")
    ) as env:
        team = support.build()
        team.ask_human_default = "no order number"
        compiled = team.compile()
        script = {"triage_agent": [call("ask_human", question="Order number?"), say("Proceeding without it.")]}
        async with running_worker(env.client, "ts", [compiled], ScriptedModel(script)):
            handle = await env.client.start_workflow(
                TeamWorkflow.run,
                ConversationInput(team=compiled.spec, task="refund please", set_search_attributes=False),
                id="timeout-1", task_queue="ts")
            result = await handle.result()  # the server skips the day
            transcript = await handle.query(TeamWorkflow.transcript)
    assert result.answer == "Proceeding without it."
    assert transcript[2].content == "(No answer from the user within 1 day; using the default answer: no order number)"


async def test_pending_lists_questions_from_several_conversations(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        first, second = await start(client, task_queue), await start(client, task_queue)
        await until(lambda: asked(first, "q1"))
        await until(lambda: asked(second, "q1"))

        async def both_listed() -> bool:  # the visibility store lags the workflows' own state
            return {first.id, second.id} <= {wid for wid, _ in await pending_questions(client)}
        await until(both_listed, "both conversations' questions listed")
        for handle in (first, second):
            await handle.terminate("test over")
