"""A LangGraph run's own breakpoints (`interrupt_before` / `interrupt_after`, agents' names or
"*"), driven by the real `langgraph-sdk`: the run pauses before or after the named agents as
LangGraph's static breakpoints show (`next`, `tasks` without interrupts, `{"__interrupt__": []}`
in `updates`), and goes on with a run without input or with `command={"resume": ...}`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import BadRequestError, ConflictError, UnprocessableEntityError
from temporalio.client import Client

from durable_teams.client.replay_state import replay_history
from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def said_by(values: dict[str, Any], agent: str) -> int:
    return sum(1 for m in values["messages"] if m["type"] == "ai" and m.get("name") == agent)


async def test_a_run_pauses_before_and_after_the_agents_it_names(client: Client, task_queue: str) -> None:
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["faang"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create())["thread_id"]
            parts = [(p.event, p.data) async for p in lg.runs.stream(
                thread, "faang", input=human(faang.QUESTION), interrupt_before=["math_expert"],
                stream_mode=["updates", "values"])]
            paused: Any = await lg.threads.get_state(thread)
            paused_thread = await lg.threads.get(thread)
            with pytest.raises(ConflictError):  # multitask_strategy reject: the paused turn is this thread's
                await lg.runs.create(thread, "faang", input=human("and now?"))
            with pytest.raises(httpx.HTTPStatusError) as unclear:  # `wait` raises httpx's own
                await lg.runs.wait(thread, "faang", command={"resume": "maybe"})
            done = await lg.runs.wait(thread, "faang", input=None)  # LangGraph's way on past a breakpoint

            after = (await lg.threads.create())["thread_id"]
            pauses = [await lg.runs.wait(after, "faang", input=human(faang.QUESTION), interrupt_after="*")]
            nexts = []
            while (state := await lg.threads.get_state(after))["tasks"] == [] and \
                    (await lg.threads.get(after))["status"] == "interrupted":
                nexts.append(state["next"])
                pauses.append(await lg.runs.wait(after, "faang", command={"resume": True}))
            stopped_thread = (await lg.threads.create())["thread_id"]
            await lg.runs.wait(stopped_thread, "faang", input=human(faang.QUESTION), interrupt_before="*")
            stopped = await lg.runs.wait(stopped_thread, "faang", command={"resume": "no"})
            stopped_run = await lg.runs.get(stopped_thread, "t1")
            with pytest.raises(BadRequestError, match="no agent 'nobody' in team faang"):
                await lg.runs.create(after, "faang", input=human("hi"), interrupt_before=["nobody"])
            with pytest.raises(UnprocessableEntityError, match="on a run that resumes"):
                await lg.runs.create(after, "faang", command={"resume": True}, interrupt_before=["math_expert"])
            with pytest.raises(ConflictError, match="no input, and no breakpoint waits"):
                await lg.runs.create(after, "faang", input=None)
        transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript, True)
        for paused_thread_id in (thread, after):  # the pauses replay as recorded (raises if not)
            await replay_history(client, await client.get_workflow_handle(paused_thread_id).fetch_history())

    updates = [data for event, data in parts if event == "updates"]
    assert updates[-1] == {"__interrupt__": []}  # a static breakpoint: no Interrupt of its own
    assert all("__interrupt__" not in data for event, data in parts if event == "values")
    last_values = [data for event, data in parts if event == "values"][-1]
    assert said_by(last_values, "math_expert") == 0 and said_by(last_values, "research_expert") == 2  # its search, its answer
    assert unclear.value.response.status_code == 400
    assert "may math_expert run? ('maybe' is not a plain yes or no" in unclear.value.response.text
    assert paused["next"] == ["math_expert"] and paused["interrupts"] == []
    assert [(t["name"], t["interrupts"]) for t in paused["tasks"]] == [("math_expert", [])]
    assert paused_thread["status"] == "interrupted" and paused_thread["interrupts"] == {}
    assert "__interrupt__" not in done and done["messages"][-1]["content"] == faang.ANSWER
    assert sum(1 for m in transcript if m.role == "tool" and m.name == "add") == 4
    # after every agent's run: supervisor, research_expert, supervisor, math_expert, supervisor
    assert len(pauses) == 6 and all("__interrupt__" not in p for p in pauses)
    assert nexts == [[]] * 5  # after an agent, what runs next is routed when resumed: not named
    assert pauses[-1]["messages"][-1]["content"] == faang.ANSWER
    # stopped before the supervisor's first run: nothing ran, the run ended
    assert [m["type"] for m in stopped["messages"]] == ["human", "ai"] and "__interrupt__" not in stopped
    assert "stopped supervisor at a breakpoint before it ran" in stopped["messages"][-1]["content"]
    assert stopped_run["status"] == "interrupted"
