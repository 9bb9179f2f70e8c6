"""`threads.update_state` through the real `langgraph-sdk`, as LangGraph users do time travel:
the user's question edited at its turn's checkpoint, kept as a new checkpoint (state and
history show it) until a run with `input=None` answers it on the same thread; a message added
to an idle thread answered the same way; what it cannot do refused by name (422); another
tenant's thread not found."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from temporalio.client import Client

from durable_teams.gateway.core.scopes import Token
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, echo

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TOKENS = [Token("shop-secret", "shop"), Token("crm-secret", "crm")]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def said(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["content"]) for m in state["values"]["messages"]]


async def test_an_edited_question_is_answered_on_the_same_thread(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with running_gateway(client, task_queue, teams=["echo"], tokens=TOKENS) as url:
            lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")
            thread = (await lg.threads.create())["thread_id"]
            await lg.runs.wait(thread, "echo", input=human("one"))
            await lg.runs.wait(thread, "echo", input=human("two"))
            history = await lg.threads.get_history(thread, limit=40)
            # the checkpoint where "two" is the last message: its turn's start
            start = next(s for s in history if s["values"]["messages"]
                         and s["values"]["messages"][-1]["content"] == "two")
            question = start["values"]["messages"][-1]
            other = get_client(url=f"{url}/langgraph", api_key="crm-secret")
            with pytest.raises(NotFoundError):
                await other.threads.update_state(thread, {"messages": [{**question, "content": "TWO?"}]},
                                                 checkpoint=start["checkpoint"])
            with pytest.raises(UnprocessableEntityError, match="of a 'ai' message"):
                reply = history[0]["values"]["messages"][-1]
                await lg.threads.update_state(thread, {"messages": [{**reply, "content": "no"}]})
            with pytest.raises(UnprocessableEntityError, match="as_node='echo'"):
                await lg.threads.update_state(thread, {"messages": [{**question, "content": "x"}]}, as_node="echo")
            with pytest.raises(UnprocessableEntityError, match="with replies after it at this checkpoint"):
                await lg.threads.update_state(thread, {"messages": [{**question, "content": "x"}]})
            with pytest.raises(httpx.HTTPStatusError) as too_long:
                await lg.threads.update_state(thread, {"messages": [{**question, "content": "x" * 13_000}]},
                                              checkpoint=start["checkpoint"])
            updated = await lg.threads.update_state(thread, {"messages": [{**question, "content": "TWO?"}]},
                                                    checkpoint=start["checkpoint"])
            staged = await lg.threads.get_state(thread)
            staged_history = await lg.threads.get_history(thread, limit=3)
            with pytest.raises(httpx.HTTPStatusError) as waiting:  # `wait` raises httpx's own
                await lg.runs.wait(thread, "echo", input=human("three"))
            both = await asyncio.gather(*(lg.runs.create(thread, "echo", input=None) for _ in range(2)),
                                        return_exceptions=True)  # two runs at once: one takes the edit
            made = [r for r in both if isinstance(r, dict)]
            answered = await lg.runs.join(thread, made[0]["run_id"])
            after = await lg.threads.get_state(thread)
            added = await lg.threads.update_state(thread, human("three"))
            then = await lg.runs.wait(thread, "echo", input=None)
            with pytest.raises(httpx.HTTPStatusError) as taken:  # each update is taken once
                await lg.runs.wait(thread, "echo", input=None)

    assert too_long.value.response.status_code == 413
    assert "the message is over 12 KiB" in too_long.value.response.json()["error"]["message"]
    assert waiting.value.response.status_code == 409
    assert "holds an update (threads.update_state" in waiting.value.response.json()["error"]["message"]
    assert taken.value.response.status_code == 409 and "nothing to resume" in taken.value.response.text
    assert updated["checkpoint"]["thread_id"] == thread
    assert updated["checkpoint"]["checkpoint_id"] == f"{start['checkpoint']['checkpoint_id']}+edit"
    assert said(staged) == [("human", "one"), ("ai", "heard: one"), ("human", "TWO?")]
    assert staged["next"] == ["echo"] and staged["checkpoint"] == updated["checkpoint"]
    assert staged["parent_checkpoint"]["checkpoint_id"] == start["checkpoint"]["checkpoint_id"]
    assert staged_history[0]["checkpoint"]["checkpoint_id"] == updated["checkpoint"]["checkpoint_id"]
    assert staged_history[0]["values"] == staged["values"]
    assert answered["messages"][-1]["content"] == "heard: TWO?"
    assert said(after) == [("human", "one"), ("ai", "heard: one"), ("human", "TWO?"), ("ai", "heard: TWO?")]
    assert added["checkpoint"]["checkpoint_id"].endswith("+input")
    assert len(made) == 1 and [type(r).__name__ for r in both if not isinstance(r, dict)] == ["ConflictError"]
    assert [m["content"] for m in then["messages"][2:]] == ["TWO?", "heard: TWO?", "three", "heard: three"]


async def test_the_first_question_is_edited_on_the_same_thread_not_on_a_copy(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with running_gateway(client, task_queue, teams=["echo"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="echo"))["thread_id"]
            await lg.runs.wait(thread, "echo", input=human("one"))
            copy = (await lg.threads.copy(thread))["thread_id"]
            start = (await lg.threads.get_history(thread, limit=10))[-1]
            question = start["values"]["messages"][-1]
            copied_start = (await lg.threads.get_history(copy, limit=10))[-1]
            with pytest.raises(UnprocessableEntityError, match="first message .thread .* did not begin empty"):
                await lg.threads.update_state(copy, {"messages": [{**question, "content": "x"}]},
                                              checkpoint=copied_start["checkpoint"])
            await lg.threads.update_state(thread, {"messages": [{**question, "content": "ONE?"}]},
                                          checkpoint=start["checkpoint"])
            staged = await lg.threads.get_state(thread)
            streamed = [p.data async for p in lg.runs.stream(thread, "echo", input=None, stream_mode="values")
                        if p.event == "values"]
            after = await lg.threads.get_state(thread)
            runs = await lg.runs.list(thread)

    assert start["metadata"]["kind"] == "turn" and said(start) == [("human", "one")] and start["next"] == ["echo"]
    assert said(staged) == [("human", "ONE?")] and staged["next"] == ["echo"]
    assert streamed[-1]["messages"][-1]["content"] == "heard: ONE?"
    assert said(after) == [("human", "ONE?"), ("ai", "heard: ONE?")]
    assert [(r["run_id"], r["status"]) for r in runs] == [("t1", "success")]  # the edited turn is turn 1 again
