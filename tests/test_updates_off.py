"""A cluster set up before workflow updates were on by default (`frontend.enableUpdateWorkflowExecution`
false): turns go in as the durable `post_message` signal and answers as `human_reply`, so the
library, `chat` and the gateway all still hold a conversation. Before, every turn failed with
"UpdateWorkflowExecution operation is disabled on this namespace"."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowQueryFailedError

from durable_teams.client import updates_off
from durable_teams.client.refusals import (
    ConversationBusy,
    ConversationEnded,
    Patience,
    QuestionClosed,
    TurnConflict,
    TurnRejected,
)
from durable_teams.client.send import send_reply, send_turn, submit_turn
from durable_teams.client.start import start_conversation
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput, UserTurn

from .cli_process import cli_env, run_cli
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]



def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if last["role"] == "user" and "order" in str(last["content"]).lower():
        return call("ask_human", question="Which order do you mean?")
    if last["role"] == "user":
        return say(f"You said: {last['content']}")
    return say(f"Order {last['content']} is on its way.")


DESK = Swarm([Agent("desk", "Help with orders.", tools=["ask_human"])], name="desk").compile()


async def conversation(client: Client, task_queue: str) -> str:
    wid = f"desk-{uuid.uuid4().hex[:8]}"
    await start_conversation(client, "desk", ConversationInput(team_name="desk", single_turn=False),
                             id=wid, task_queue=task_queue)
    return wid


async def test_the_library_sends_turns_and_answers_as_signals(old_cluster: Client) -> None:
    client, queue = old_cluster, f"tq-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, queue, [DESK], ScriptedModel(desk_script)):
        wid = await conversation(client, queue)
        first = await send_turn(client, wid, "hello")
        assert (first.turn, first.text) == (1, "You said: hello")
        again = await submit_turn(client, wid, "hello once more", turn_id="t-2")
        same = await submit_turn(client, wid, "hello once more", turn_id="t-2")  # a retry: the same turn
        assert again.number == same.number == 2
        assert (await again.reply()).text == "You said: hello once more"
        asking = await submit_turn(client, wid, "where is my order?")
        question = await pending_question(client.get_workflow_handle(wid))
        assert await send_reply(client, wid, question.question_id, text="B-42") == question.question_id
        assert (await asking.reply()).text == "Order B-42 is on its way."
        with pytest.raises(TurnConflict, match="another turn came first"):
            await submit_turn(client, wid, "late", after_turns=1)
        with pytest.raises(TurnRejected, match="the message is empty"):
            await submit_turn(client, wid, "   ")


async def test_chat_and_the_gateway_hold_a_conversation(old_cluster: Client) -> None:
    client, queue = old_cluster, f"tq-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, queue, [DESK], ScriptedModel(desk_script)):
        thread = f"desk-{uuid.uuid4().hex[:8]}"
        chat = await run_cli("chat", "desk", "--thread", thread, env=cli_env(client, queue),
                             stdin="Where is my order?\nB-42\n/quit\n")
        assert chat.code == 0, chat
        assert "? [desk] Which order do you mean?\n> [desk] Order B-42 is on its way." in chat.out, chat.out
        async with running_gateway(client, queue, teams=["desk"]) as url, httpx.AsyncClient(base_url=url) as http:
            started = await http.post("/threads", json={"team": "desk"})
            tid = started.json()["thread_id"]
            async with http.stream("POST", f"/threads/{tid}/turns", json={"text": "hi there"}) as turn:
                events = [json.loads(line[5:]) async for line in turn.aiter_lines() if line.startswith("data:")]
    assert started.status_code == 201, started.text
    assert events[-1]["type"] == "done" and events[-1]["text"] == "You said: hi there", events


async def test_answers_that_are_not_taken_are_refused_as_an_update_would(old_cluster: Client) -> None:
    """The signal is checked by the workflow after it is sent; the `answer_outcome` query makes
    that check the sender's answer: a second answer to one question is `QuestionClosed`, and
    the gateway says 409 for it, as it does where updates are on."""
    client, queue = old_cluster, f"tq-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, queue, [DESK], ScriptedModel(desk_script)):
        wid = await conversation(client, queue)
        asking = await submit_turn(client, wid, "where is my order?")
        question = await pending_question(client.get_workflow_handle(wid))
        await send_reply(client, wid, question.question_id, text="A-17")
        with pytest.raises(QuestionClosed, match="already answered"):
            await send_reply(client, wid, question.question_id, text="B-42")
        assert (await asking.reply()).text == "Order A-17 is on its way."
        async with running_gateway(client, queue, teams=["desk"]) as url, httpx.AsyncClient(base_url=url) as http:
            unknown = await http.post(f"/threads/{wid}/questions/q9", json={"text": "x"})
    assert unknown.status_code == 409 and unknown.json()["error"]["type"] == "reply_rejected", unknown.text


async def test_a_full_queue_and_a_closed_conversation_refuse_before_anything_is_sent(
        old_cluster: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    client, queue = old_cluster, f"tq-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(updates_off, "MAX_QUEUED_TURNS", 3)  # the turn in progress counts, as in the workflow
    async with running_worker(client, queue, [DESK], ScriptedModel(desk_script)):
        wid = await conversation(client, queue)
        await submit_turn(client, wid, "where is my order?")  # its question holds the queue
        await pending_question(client.get_workflow_handle(wid))
        for n in range(2):
            await submit_turn(client, wid, f"and another thing {n}")
        with pytest.raises(ConversationBusy, match="3 turns are waiting to be answered"):
            await submit_turn(client, wid, "one too many", busy_timeout=0.5)
        await client.get_workflow_handle(wid).signal(TeamWorkflow.close)
        with pytest.raises(ConversationEnded, match="is closed"):
            await submit_turn(client, wid, "after the close")
        status = await client.get_workflow_handle(wid).query(TeamWorkflow.status)
    assert status.turns == 3  # the refused ones never went in


class OlderWorkers:
    """A handle whose workers predate the `turn_number` query."""

    def __init__(self) -> None:
        self.id, self.signals = "c1", []

    async def query(self, query: object, args: list[object]) -> object:
        if query == TeamWorkflow.status:
            return ConversationStatus(active_agent=None, turns=1, model_calls=0, pending=[], queued_turns=0,
                                      last_reply=None, closed=False)
        raise WorkflowQueryFailedError("Query handler for 'turn_number' expected but not found")

    async def signal(self, name: str, arg: object) -> None:
        self.signals.append(name)


async def test_workers_without_turn_numbers_get_no_turn_they_could_not_confirm() -> None:
    """Sent anyway, the turn would run while its sender is told it failed (and a retry would
    run it twice): so nothing is sent, and the reason says what to upgrade."""
    handle = OlderWorkers()
    with pytest.raises(TurnRejected, match="its workers predate turns sent as signals"):
        await updates_off.submit_by_signal(handle, UserTurn(text="hi", turn_id="t1"),  # type: ignore[arg-type]
                                           Patience("c1", 1.0))
    assert handle.signals == []


async def test_approvals_in_words_and_their_outcomes_hold_with_updates_off(old_cluster: Client) -> None:
    """The chat path where answers go in as `human_reply` signals: a "yes" after a "yes" to a
    plain question approves, an unclear answer is asked again in the same thread (history
    resent or thread named) and the next "Yes." is taken, the approver gets the turn it
    answered, and a stream closed after its first chunk still left its turn in the thread."""
    from durable_teams.gateway.core.thread_marks import mark_line

    from .gateway_helpers import keyed_turn, say_on
    from .teams import AGAIN, APPROVAL, ASKED, DONE, FIRST, REFUNDS, UNCLEAR
    from .teams import DESK as REFUND_DESK
    from .teams import desk_script as refund_script

    client, queue = old_cluster, f"tq-{uuid.uuid4().hex[:8]}"
    REFUNDS.clear()
    async with running_worker(client, queue, [REFUND_DESK], ScriptedModel(refund_script)), \
            running_gateway(client, queue, teams=["desk"]) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yes_twice = f"desk-yes-{uuid.uuid4().hex[:8]}"
        said = [await say_on(http, yes_twice, text) for text in (FIRST, "yes", "yes")]
        named = f"desk-unclear-{uuid.uuid4().hex[:8]}"
        unclear = [await say_on(http, named, text) for text in (FIRST, "Order 4711", *UNCLEAR, "Yes.")]

        history: list[dict[str, str]] = []
        answers, threads = [], []
        for text in (FIRST, "Order 4712", UNCLEAR[0], "Yes."):
            history.append({"role": "user", "content": text})
            response = await http.post("/v1/chat/completions", json={"model": "desk", "messages": history})
            answers.append(response.json()["choices"][0]["message"]["content"])
            threads.append(response.headers["x-thread-id"])
            history.append({"role": "assistant", "content": answers[-1]})

        keyed = f"desk-keyed-{uuid.uuid4().hex[:8]}"

        async def keyed_say(text: str, key: str) -> httpx.Response:
            return await http.post("/v1/chat/completions", headers={"X-Thread-Id": keyed, "Idempotency-Key": key},
                                   json={"model": "desk", "messages": [{"role": "user", "content": text}]})
        by_key = [await keyed_say(text, key) for text, key in (
            (FIRST, "k1"), ("other text", "k1"), (FIRST, "k1"), ("Order 4713", "k2"), ("yes", "k3"),
            ("Order 4713", "k2"), (FIRST, "k4"), ("Order 5", "k5"), ("yes", "k3"))]
        keyed_status = await client.get_workflow_handle(keyed).query(TeamWorkflow.status)

        native = (await http.post("/threads", json={"team": "desk"})).json()["thread_id"]
        turns = [await keyed_turn(http, native, text, "t1") for text in (FIRST, FIRST, "other text")]

        cut = f"desk-cut-{uuid.uuid4().hex[:8]}"
        async with http.stream("POST", "/v1/chat/completions", headers={"X-Thread-Id": cut}, json={
                "model": "desk", "stream": True, "messages": [{"role": "user", "content": "cut short"}]}) as r:
            async for _ in r.aiter_bytes():
                break  # the client leaves after the first chunk
        status = await client.get_workflow_handle(cut).query(TeamWorkflow.status)
    assert said == [ASKED, APPROVAL.replace("4711", "yes"), DONE]
    assert unclear == [ASKED, APPROVAL, *[AGAIN] * len(UNCLEAR), DONE]
    assert answers == [ASKED + mark_line(threads[0]), APPROVAL.replace("4711", "4712"),
                       AGAIN.replace("4711", "4712"), DONE]
    assert len(set(threads)) == 1
    assert [r.status_code for r in by_key] == [200, 409, 200, 200, 200, 200, 200, 200, 200]
    assert [r.json()["choices"][0]["message"]["content"] for i, r in enumerate(by_key) if i != 1] == [
        ASKED, ASKED, APPROVAL.replace("4711", "4713"), DONE, DONE, ASKED, APPROVAL.replace("4711", "5"), DONE]
    assert [q.kind for q in keyed_status.pending] == ["approval"]  # the late "yes" approved nothing
    assert REFUNDS == ["yes", "4711", "4712", "4713"]
    assert [code for code, _ in turns] == [200, 200, 409]
    assert [e["type"] for e in turns[1][1]] == [e["type"] for e in turns[0][1]]  # streamed again
    assert turns[0][1][-1]["type"] == "question"
    assert status.turns == 1  # accepted before the first byte went out
