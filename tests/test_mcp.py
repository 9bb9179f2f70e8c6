"""MCP tools: a real MCP server (tests/mcp_server.py) over stdio and streamable HTTP.

The tool list is listed once per conversation and recorded; each call is an activity; a tool's
error goes back to the model; approval works; a transport failure retries within a bound; a
tool the server dropped later is answered with the server's error; replay needs no server.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from pydantic import TypeAdapter

pytest.importorskip("mcp", reason="the mcp extra is not installed (it needs Python 3.11+)")

from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.mcp_servers import MCPHttp, MCPStdio
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows import mcp_tools as workflow_mcp
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import TeamSpec, ToolSpec
from durable_teams.workflows.state import ConversationInput, HumanReply

from . import mcp_server
from .conftest import running_worker
from .inspect_history import activity_names
from .mcp_helpers import SERVER, http_server, tool_messages
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TOOLS = ["broken", "crash", "increment", "lookup_order", "pid", "refund", "slow"]
"""What the test server lists."""


def clerk(*servers: object) -> Swarm:
    agent = Agent("clerk", "You look after orders.", mcp=list(servers))  # type: ignore[arg-type]
    return Swarm([agent], name=f"mcp-{uuid.uuid4().hex[:6]}")


# ---- pure: what a recorded list becomes ------------------------------------------------------

def test_recorded_tools_become_team_tools_with_prefix_filter_and_approval():
    team = clerk(MCPStdio("orders", "x", tool_prefix="orders_", allowed_tools=["refund", "lookup_order"],
                          needs_approval=["refund"], max_attempts=2)).compile().spec
    assert workflow_mcp.unlisted(team).keys() == {"orders"}
    listed = [ToolSpec(name=n, description=n, mcp_server="orders", mcp_tool=n)
              for n in ("lookup_order", "refund", "broken")]
    workflow_mcp.record(team, "orders", listed)
    workflow_mcp.expand(team)
    workflow_mcp.expand(team)  # idempotent: a continued run expands the carried team again
    assert workflow_mcp.unlisted(team) == {}
    assert team.agents["clerk"].tools == ["orders_lookup_order", "orders_refund"]
    refund = team.tools["orders_refund"]
    assert (refund.mcp_server, refund.mcp_tool, refund.needs_approval, refund.max_attempts,
            refund.idempotent) == ("orders", "refund", True, 2, False)
    assert team.tools["orders_lookup_order"].needs_approval is False


def test_how_to_reach_a_server_stays_on_the_worker():
    server = MCPHttp("search", "http://10.0.0.9/mcp", headers={"Authorization": "Bearer SECRET"})
    compiled = clerk(server, MCPStdio("files", "/opt/bin/files-server", ["--root", "/srv"])).compile()
    data = TypeAdapter(TeamSpec).dump_json(compiled.spec).decode()  # what travels through history
    assert "SECRET" not in data and "10.0.0.9" not in data and "/opt/bin" not in data
    assert sorted(compiled.tools.mcp_servers) == ["files", "search"]  # the worker's side
    with pytest.raises(ValueError, match="two different MCP servers are named 'search'"):
        clerk(server, MCPHttp("search", "http://elsewhere/mcp")).compile()


def test_a_listed_name_that_clashes_is_a_clear_error():
    team = clerk(MCPStdio("orders", "x")).compile().spec
    workflow_mcp.record(team, "orders", [ToolSpec(name="ask_human", mcp_server="orders")])
    with pytest.raises(workflow_mcp.MCPToolsError, match="give the server a tool_prefix"):
        workflow_mcp.expand(team)


def test_the_graph_draws_an_agents_mcp_servers():
    from durable_teams.teams.graph import team_graph

    team = clerk(MCPStdio("orders", "x", needs_approval=True), MCPHttp("search", "http://h/mcp"))
    assert team_graph(team.compile().spec).splitlines()[2:5] == [
        '    clerk["clerk"]',
        '    clerk --- clerk_mcp_orders[("MCP server: orders<br/>(needs approval)")]',
        '    clerk --- clerk_mcp_search[("MCP server: search")]',
    ]


# ---- stdio: a subprocess server --------------------------------------------------------------

async def test_stdio_tools_run_errors_reach_the_model_and_approval_gates(
        client: Client, task_queue: str, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    server = MCPStdio("orders", sys.executable, [SERVER], env={"MCP_CALL_LOG": str(log)},
                      needs_approval=["refund"])
    team = clerk(server).compile()
    model = ScriptedModel({"clerk": [
        call("lookup_order", order_id="4711"),
        call("broken", reason="disk full"),
        call("refund", order_id="4711", reason="fell apart"),
        say("Refunded."),
    ]})
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="refund order 4711"),
            id=f"mcp-stdio-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        question = await pending_question(handle)
        assert (question.kind, question.tool) == ("approval", "refund")
        assert log.read_text().splitlines() == ["lookup_order 4711", "broken"]  # not yet refunded
        await handle.execute_update(TeamWorkflow.answer, HumanReply(
            question_id=question.question_id, approved=True))
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, True)
    assert result.answer == "Refunded."
    assert log.read_text().splitlines() == ["lookup_order 4711", "broken", "refund 4711"]
    assert tool_messages(transcript) == [
        ("lookup_order", "Order 4711: hiking boots, delivered.", "message"),
        ("broken", "Error: Error executing tool broken: cannot do that: disk full", "error"),
        ("refund", "Refunded order 4711.", "message"),
    ]
    offered = {t["function"]["name"]: t["function"] for t in model.requests[0][2]}
    assert sorted(offered) == TOOLS
    assert offered["lookup_order"]["description"] == "Find an order by its number."
    assert offered["lookup_order"]["parameters"]["required"] == ["order_id"]
    assert await activity_names(handle) == [  # labels first: a raw start asks which exist
        "available_labels", "list_mcp_tools", "call_model", "call_mcp_tool", "call_model", "call_mcp_tool",
        "call_model", "call_mcp_tool", "call_model"]
    # replay reads the recorded list: no MCP server is reachable (or needed) here
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    replayed = await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=True)
    assert replayed.replay_failure is None


# ---- streamable HTTP: a server in this process, changed and stopped mid-conversation ---------

async def test_http_tool_list_is_recorded_once_and_changes_are_told_to_the_model(
        client: Client, task_queue: str) -> None:
    server = mcp_server.build()
    async with http_server(server) as url:
        team = clerk(MCPHttp("orders", url, max_attempts=2)).compile()
        model = ScriptedModel({"clerk": [
            call("lookup_order", order_id="1"), say("Found it."),
            call("lookup_order", order_id="2"), say("It is gone."),
        ]})
        async with running_worker(client, task_queue, [team], model):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
                id=f"mcp-http-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
            first = await send_turn(client, handle.id, "order 1?")
            server.remove_tool("lookup_order")  # the server changes while the conversation runs

            @server.tool()
            def new_tool() -> str:
                """Appears after the conversation listed its tools."""
                return "new"

            second = await send_turn(client, handle.id, "order 2?")
            transcript = await handle.query(TeamWorkflow.transcript, True)
            names = await activity_names(handle)
            await handle.signal(TeamWorkflow.close)
            await handle.result()
    assert (first.text, second.text) == ("Found it.", "It is gone.")
    assert tool_messages(transcript) == [
        ("lookup_order", "Order 1: hiking boots, delivered.", "message"),
        ("lookup_order", "Error: Unknown tool: lookup_order", "error"),  # the server said so
    ]
    offered = [sorted(t["function"]["name"] for t in tools) for _, _, tools in model.requests]
    assert offered == [TOOLS] * 4  # the recorded list, all along
    assert names.count("list_mcp_tools") == 1


async def test_a_call_that_outlives_its_timeout_is_not_run_again(
        client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("MCP_CALL_LOG", str(log))  # the server runs in this process
    model = ScriptedModel({"clerk": [call("slow", seconds=3), say("Too slow.")]})
    async with http_server(mcp_server.build()) as url:
        team = clerk(MCPHttp("orders", url, timeout_seconds=1, max_attempts=3)).compile()
        async with running_worker(client, task_queue, [team], model):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task="go"),
                id=f"mcp-slow-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
            result = await handle.result()
            transcript = await handle.query(TeamWorkflow.transcript, True)
    assert result.answer == "Too slow."
    assert tool_messages(transcript) == [("slow", (
        "Error: slow did not finish within 1s. The tool may or may not have completed; it was "
        "not retried."), "error")]
    assert log.read_text().splitlines() == ["slow"]  # sent once; not sent again


async def test_an_unreachable_server_is_tried_within_the_bound_then_the_model_is_told(
        client: Client, task_queue: str) -> None:
    model = ScriptedModel({"clerk": [say("Hello."), call("lookup_order", order_id="1"),
                                     say("The order service is down.")]})
    async with http_server(mcp_server.build()) as url:
        team = clerk(MCPHttp("orders", url, max_attempts=2)).compile()
        async with running_worker(client, task_queue, [team], model):
            handle = await client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
                id=f"mcp-down-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
            await send_turn(client, handle.id, "hi")
    async with running_worker(client, task_queue, [team], model):  # the server has stopped
        reply = await send_turn(client, handle.id, "order 1?")
        transcript = await handle.query(TeamWorkflow.transcript, True)
        names = await activity_names(handle)
        await handle.signal(TeamWorkflow.close)
        await handle.result()
    assert reply.text == "The order service is down."
    assert tool_messages(transcript) == [("lookup_order", (
        "Error: MCP server 'orders' could not be reached (2 attempts): ConnectError: All "
        "connection attempts failed. lookup_order did not run."), "error")]
    assert names.count("call_mcp_tool") == 1  # tried twice within one activity: nothing was sent


async def test_a_server_that_cannot_list_its_tools_fails_the_conversation_clearly(
        client: Client, task_queue: str) -> None:
    port = free_port()  # nothing listens here
    team = clerk(MCPHttp("orders", f"http://127.0.0.1:{port}/mcp", max_attempts=2)).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel({"clerk": [say("never")]})):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task="hi"),
            id=f"mcp-nolist-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert str(failed.value.cause.message).startswith(  # type: ignore[attr-defined]
        "MCP server 'orders' could not list its tools: ")
