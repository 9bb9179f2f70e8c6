"""The LangGraph door driven by the JS client, `@langchain/langgraph-sdk` from npm, under node,
unchanged (tests/langgraph_js_flows.cjs): the FAANG team's answer streamed, the support team's
question and approval as interrupts resumed with `command: {resume}`, exactly one refund; a
run's breakpoint (`interruptBefore`) gone past with `input: null`, its metadata and the thread's."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.examples import faang, support
from durable_teams.gateway.core.scopes import Token
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker, system_program_missing
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

SDK_DIR = os.environ.get("DURABLE_TEAMS_LANGGRAPH_JS")  # a folder where `npm install
# --prefix DIR @langchain/langgraph-sdk` ran (a download: not done by the test itself)
FLOWS = Path(__file__).parent / "langgraph_js_flows.cjs"


async def node_flows(url: str, key: str) -> Any:
    if SDK_DIR is None or not (Path(SDK_DIR) / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        system_program_missing("set DURABLE_TEAMS_LANGGRAPH_JS to a folder where "
                               "`npm install --prefix DIR @langchain/langgraph-sdk@1` ran",
                               "DURABLE_TEAMS_REQUIRE_LANGGRAPH_JS")
    env = {**os.environ, "NODE_PATH": str(Path(SDK_DIR or "") / "node_modules")}
    proc = await asyncio.create_subprocess_exec("node", str(FLOWS), url, key, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_the_js_sdk_drives_faang_and_support(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    teams = [faang.build().compile(), support.build().compile()]
    model = ScriptedModel(teams={"faang": faang.SCRIPT, "support": support.SCRIPT})
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"],
                                   tokens=[Token("js-secret", "web")]) as url:
            out = await node_flows(f"{url}/langgraph", "js-secret")  # sent as x-api-key
        # the scope "web"'s thread X is the workflow web:X (a tenant's thread ids are its own)
        transcript = await client.get_workflow_handle(f"web:{out['support']['thread']}").query(TeamWorkflow.transcript, True)

    assert [a["assistant_id"] for a in out["assistants"]] == ["faang", "support"]
    events = out["faang"]["events"]
    assert events[0][0] == "metadata" and {"values", "updates", "messages"} <= {e for e, _ in events}
    values = [data for event, data in events if event == "values"]
    assert values[-1]["messages"][-1]["content"] == faang.ANSWER and "1,977,586" in faang.ANSWER
    assert [(r["run_id"], r["status"]) for r in out["faang"]["runs"]] == [("t1", "success")]
    flow = out["support"]
    assert flow["asked"]["__interrupt__"][0]["value"]["question"] == "Sorry to hear that! What's your order number?"
    assert flow["approval"]["__interrupt__"][0]["value"]["action_requests"][0]["name"] == "execute_refund"
    assert flow["unclear"] == 400
    assert flow["done"]["messages"][-1]["content"] == support.ANSWER and "__interrupt__" not in flow["done"]
    assert flow["state"]["interrupts"] == [] and flow["copied"]["thread_id"] != flow["thread"]
    assert len(support.REFUNDS) == 1 and sum(1 for m in transcript if m.role == "tool" and m.name == "execute_refund") == 1
    paused = out["breakpoints"]  # interruptBefore, then on with input null
    assert "__interrupt__" not in paused["paused"] and paused["state"]["next"] == ["math_expert"]
    assert paused["state"]["metadata"]["source"] == "js" and paused["state"]["interrupts"] == []
    assert paused["done"]["messages"][-1]["content"] == faang.ANSWER
    assert paused["run"]["metadata"] == {"source": "js"} and paused["run"]["status"] == "success"
    assert paused["updated"]["metadata"] | {"user": "ada", "stage": "answered"} == paused["updated"]["metadata"]
