"""A LangGraph thread's metadata updated and searched by, its history with each checkpoint's
values, the `debug` stream mode, and what this door refuses by name (`update_state` as an agent, the
`checkpoints` stream mode, run context), a run's metadata kept and shown: driven by the real `langgraph-sdk`."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import BadRequestError, UnprocessableEntityError
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_metadata_history_values_and_what_is_refused_by_name(client: Client, task_queue: str) -> None:
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["faang"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(metadata={"user": "ada", "stage": "new"}))["thread_id"]
            other = (await lg.threads.create(metadata={"user": "bob"}))["thread_id"]
            updated = await lg.threads.update(thread, metadata={"stage": "triaged", "priority": 2})
            found = await lg.threads.search(metadata={"stage": "triaged"})
            by_user = await lg.threads.search(metadata={"user": "bob"})
            with pytest.raises(BadRequestError, match="graph_id and assistant_id are its team's name"):
                await lg.threads.update(other, metadata={"graph_id": "support"})
            done = await lg.runs.wait(thread, "faang", input=human(faang.QUESTION))
            history = await lg.threads.get_history(thread, limit=40)
            with pytest.raises(UnprocessableEntityError, match="threads.update_state as_node='supervisor'"):
                await lg.threads.update_state(thread, {"messages": [{"role": "user", "content": "hi"}]},
                                              as_node="supervisor")
            with pytest.raises(UnprocessableEntityError, match="stream_mode 'checkpoints'"):
                await lg.runs.stream(thread, "faang", input=human("again"), stream_mode="checkpoints").__anext__()
            debug = [p.data for p in [p async for p in lg.runs.join_stream(thread, "t1", stream_mode="debug")]
                     if p.event == "debug"]
            tagged = await lg.runs.create(other, "faang", input=human(faang.QUESTION), metadata={"source": "test"})
            await lg.runs.join(other, tagged["run_id"])
            tagged_later = await lg.runs.get(other, tagged["run_id"])
            tagged_state = await lg.threads.get_state(other)
            untagged = await lg.runs.get(thread, "t1")
            with pytest.raises(UnprocessableEntityError, match="metadata on a run that resumes"):
                await lg.runs.create(other, "faang", command={"resume": True}, metadata={"source": "test"})
            with pytest.raises(UnprocessableEntityError, match="run context"):
                await lg.runs.create(other, "faang", input=human("again"), context={"user": "ada"})
            after = await lg.threads.get(thread)

    assert updated["metadata"] == {"graph_id": "faang", "assistant_id": "faang", "user": "ada",
                                   "stage": "triaged", "priority": 2}
    assert [t["thread_id"] for t in found] == [thread] and [t["thread_id"] for t in by_user] == [other]
    assert after["metadata"] == updated["metadata"]  # kept through the run
    assert tagged["metadata"] == tagged_later["metadata"] == {"source": "test"} and untagged["metadata"] == {}
    assert tagged_later["status"] == "success"
    assert tagged_state["metadata"] == {"source": "test", "graph_id": "faang", "assistant_id": "faang"}
    newest, oldest = history[0], history[-1]
    assert newest["metadata"]["kind"] == "turn_end" and newest["values"]["messages"] == done["messages"]
    # a turn's start as LangGraph's first step after the input: the user's message last, its agent next
    assert oldest["metadata"]["kind"] == "turn" and oldest["next"] == ["supervisor"]
    assert [m["content"] for m in oldest["values"]["messages"]] == [faang.QUESTION]
    assert [m["content"] for m in history[-2]["values"]["messages"]][0] == faang.QUESTION
    assert [e["type"] for e in debug[:4]] == ["checkpoint", "task", "task_result", "checkpoint"]
    assert debug[0]["payload"]["metadata"] == {"source": "input", "step": 0}
    assert debug[1]["payload"]["name"] == "supervisor" and debug[2]["payload"]["error"] is None
    written = debug[2]["payload"]["result"]
    assert written == [["messages", [debug[3]["payload"]["values"]["messages"][-1]]]]
    assert len([e for e in debug if e["type"] == "task_result"]) == len(done["messages"]) - 1
    assert debug[-1]["payload"]["values"] == {"messages": done["messages"]}
    sizes = [len(h["values"]["messages"]) for h in reversed(history)]
    assert sizes == sorted(sizes) and len(set(sizes)) > 3  # each checkpoint its own values, growing
