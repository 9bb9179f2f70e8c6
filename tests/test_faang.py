"""The seed's FAANG run, end to end on a real Temporal server with the scripted model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_teams.activities.wire import message_dict
from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow


async def run_faang(client: Client, task_queue: str, **team_options: object):
    team = faang.build()
    for key, value in team_options.items():
        setattr(team, key, value)
    compiled = team.compile()
    model = ScriptedModel(faang.SCRIPT)
    async with running_worker(client, task_queue, [compiled], model):
        handle = await client.start_workflow(
            TeamWorkflow.run,
            ConversationInput(team=compiled.spec, task=faang.QUESTION),
            id=f"faang-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, False, result_type=list[Message])
        full = await handle.query(TeamWorkflow.transcript, True, result_type=list[Message])
    return handle, result, transcript, full, model


def rows(messages: list[Message]) -> list[tuple[str, str | None, str]]:
    return [(m.role, m.name, m.content or ",".join(c.name for c in m.tool_calls)) for m in messages]


async def test_faang_routes_to_research_then_math(client: Client, task_queue: str) -> None:
    handle, result, transcript, full, model = await run_faang(client, task_queue)
    assert result.answer == faang.ANSWER
    assert "1,977,586" in result.answer
    assert result.status == "completed"
    assert result.model_calls == 3 + 2 + 5
    research_answer = faang.SCRIPT["research_expert"][1].content
    # langgraph-supervisor's last_message shape: 12 messages.
    assert rows(transcript) == [
        ("user", None, faang.QUESTION),
        ("assistant", "supervisor", "transfer_to_research_expert"),
        ("tool", "transfer_to_research_expert", "Successfully transferred to research_expert"),
        ("assistant", "research_expert", research_answer),
        ("assistant", "research_expert", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "supervisor", "transfer_to_math_expert"),
        ("tool", "transfer_to_math_expert", "Successfully transferred to math_expert"),
        ("assistant", "math_expert", faang.ANSWER),
        ("assistant", "math_expert", "Transferring back to supervisor"),
        ("tool", "transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("assistant", "supervisor", faang.ANSWER),
    ]
    # Math chained add calls through real tool activities: each result fed the next call.
    add_results = [m.content for m in full if m.role == "tool" and m.name == "add"]
    assert add_results == ["231317.0", "1782317.0", "1796317.0", "1977586.0"]
    # What the model was shown: the worker sees its own prompt and tools, not the supervisor's.
    math_requests = [(r, msgs, tools) for r, msgs, tools in model.requests if r.agent == "math_expert"]
    req, msgs, tools = math_requests[0]
    assert msgs[0] == {"role": "system", "content": "You are a math expert. Always use one tool at a time."}
    assert [t["function"]["name"] for t in tools] == ["add", "multiply"]
    assert research_answer in [m.get("content") for m in msgs]
    sup_tools = [t["function"]["name"] for t in model.requests[0][2]]
    assert sup_tools == ["transfer_to_research_expert", "transfer_to_math_expert"]


async def test_faang_full_history_mode_shares_worker_steps(client: Client, task_queue: str) -> None:
    _, result, transcript, _, _ = await run_faang(client, task_queue, output_mode="full_history")
    assert result.answer == faang.ANSWER
    # langgraph-supervisor's full_history: every inner tool call and result is shared.
    assert len(transcript) == 12 + 2 + 8
    assert [m.name for m in transcript if m.role == "tool"].count("add") == 4


@pytest.mark.slow  # a whole FAANG conversation and its history read page by page (3.4 s in a loaded CI run)
async def test_history_records_each_step_as_an_activity_with_a_summary(client: Client, task_queue: str) -> None:
    handle, _, _, _, _ = await run_faang(client, task_queue)
    history = await handle.fetch_history()
    scheduled = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    kinds = [e.activity_task_scheduled_event_attributes.activity_type.name for e in scheduled]
    assert kinds.count("call_model") == 10
    assert kinds.count("run_tool") == 5
    # a raw start asks the worker which labels exist first (a regular activity in new runs)
    assert kinds[0] == "available_labels"
    summaries = [e.user_metadata.summary.data.decode() for e in scheduled][1:]
    assert json.loads(summaries[0]).startswith("model: supervisor")
    assert json.loads(summaries[3]) == "tool: web_search" or "tool: web_search" in summaries[2] + summaries[1]


SEED = Path(__file__).parent / "seeds" / "langgraph_supervisor_faang_requests.json"


def normalized(messages: list[Any]) -> list[tuple]:
    """Messages as (role, name, content, calls, answered call): call ids replaced by their order
    of appearance, so scripted ids compare with the seed's."""
    ids: dict[str, int] = {}
    out = []
    for m in messages:
        m = m if isinstance(m, dict) else message_dict(m)
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                 for c in m.get("tool_calls") or []]
        for c in m.get("tool_calls") or []:
            ids.setdefault(c["id"], len(ids))
        answered = ids.get(m["tool_call_id"]) if m.get("tool_call_id") else None
        # The walkthrough's request logs hyphenate one word of the answer its log of the model's
        # response gives as "headcount".
        content = (m.get("content") or None) and m["content"].replace("head - count", "headcount")
        out.append((m["role"], m.get("name"), content, calls, answered))
    return out


def tool_schemas(tools: list[dict]) -> list[tuple]:
    return [(t["function"]["name"], t["function"]["description"], t["function"]["parameters"]["properties"])
            for t in tools]


async def test_faang_requests_match_the_seeds_message_for_message(client: Client, task_queue: str) -> None:
    """The walkthrough logged 8 of the run's model requests: supervisor, research twice,
    supervisor, math four times. The example's requests are the same messages in the same
    order, workers seeing earlier handoffs and hand-backs (`workers_see_handoffs="all"`)."""
    assert faang.build().workers_see_handoffs == "all"
    _, result, _, _, model = await run_faang(client, task_queue)
    assert result.answer == faang.ANSWER
    seed = json.loads(SEED.read_text())["requests"]
    ours = [(req.agent, msgs, tools) for req, msgs, tools in model.requests]
    assert [agent for agent, _, _ in ours] == (
        ["supervisor"] + ["research_expert"] * 2 + ["supervisor"] + ["math_expert"] * 5 + ["supervisor"])
    # The first six logged requests, exactly: messages, tools, parallel_tool_calls.
    logged = [0, 1, 2, 3, 4, 5]
    for i in logged:
        assert normalized(ours[i][1]) == normalized(seed[i]["messages"]), f"request {i + 1}"
        assert tool_schemas(ours[i][2]) == tool_schemas(seed[i]["tools"]), f"request {i + 1}"
    assert [r.parallel_tool_calls for r, _, _ in model.requests[:4:3]] == [False, False]
    assert [r.get("parallel_tool_calls") for r in seed[:4:3]] == [False, False]
    # The log's last two entries are abridged: the seventh repeats the sixth verbatim, the
    # eighth is the third math request showing only its latest add call and result (under
    # the first call's id). What it does show matches.
    assert seed[6] == seed[5]
    third_math, logged_third = normalized(ours[6][1]), normalized(seed[7]["messages"])
    assert logged_third[:9] == third_math[:9]
    assert [m[:4] for m in logged_third[9:]] == [m[:4] for m in third_math[-2:]]


async def test_by_default_a_worker_sees_only_the_handoff_that_engaged_it(client: Client, task_queue: str) -> None:
    _, result, _, _, model = await run_faang(client, task_queue, workers_see_handoffs="own")
    assert result.answer == faang.ANSWER
    first_math = next(msgs for req, msgs, _ in model.requests if req.agent == "math_expert")
    calls = [name for _, _, _, names, _ in normalized(first_math) for name, _ in names]
    assert calls == ["transfer_to_math_expert"]  # no research handoff, no transfer_back pair
