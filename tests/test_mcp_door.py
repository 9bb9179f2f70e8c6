"""Served teams as MCP tools, driven by the `mcp` SDK's own client: a call answered, a question
asked as `input_required` and answered by the repeated call, a question asked to a client of
an earlier revision by `elicitation/create`, a thread continued by id."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client

from durable_teams.gateway.mcp_door import BadCall, McpDoor, call_of, parse_state, state_of
from durable_teams.gateway.team_cards import TeamCard, card_of
from durable_teams.gateway.threads import Gateway
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ModelRequest

from .cli_process import ROOT, cli_env
from .conftest import running_worker, system_program_missing
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def shop_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return say(f"Refund started for order {last['content']}.")
    if last["content"] == "refund":
        return call("ask_human", question="Which order?")
    return say(f"you said {last['content']!r}")


SHOP_TEAM = Swarm([Agent("shop", "Help.", description="Refunds and orders.", tools=["ask_human"])], name="shop")
SHOP = SHOP_TEAM.compile()


def door(client: Client, task_queue: str, **options: Any) -> McpDoor:
    gw = Gateway(client, task_queue, poll_seconds=0.05, teams=["shop"])
    return McpDoor(gw, {"shop": "Refunds and orders."}, **options)


def test_arguments_are_checked() -> None:
    assert call_of({"message": "hi"}).message == "hi"
    assert call_of({"thread_id": "t1"}).thread_id == "t1"
    for bad, why in [({}, "give 'message'"), ({"message": ""}, "non-empty"), ({"message": 3}, "non-empty"),
                     ({"message": "x", "extra": 1}, "unknown argument"), ({"thread_id": "a\nb"}, "thread id")]:
        with pytest.raises(BadCall, match=why):
            call_of(bad)
    assert parse_state(state_of("t", "q1")) == ("t", "q1")
    with pytest.raises(BadCall):
        parse_state("not json")


async def test_a_tool_per_team_and_a_question_answered_through_input_required(client: Client, task_queue: str) -> None:
    asked: list[str] = []

    async def person(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "A-17"})

    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        async with McpClient(door(client, task_queue).server(), elicitation_callback=person) as mcp:
            tools = await mcp.list_tools()
            hello = await mcp.call_tool("shop", {"message": "hello"})
            thread = hello.structured_content["thread_id"]
            refund = await mcp.call_tool("shop", {"message": "refund", "thread_id": thread})
            bad = await mcp.call_tool("shop", {"message": ""})
        transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript)

    assert [(t.name, t.description) for t in tools.tools] == [("shop", "Refunds and orders.")]
    assert hello.content[0].text == "you said 'hello'" and not hello.is_error
    assert hello.structured_content["status"] == "completed"
    assert asked == ["[shop] Which order?"]
    assert refund.content[0].text == "Refund started for order A-17."
    assert refund.structured_content == {"thread_id": thread, "status": "completed",
                                         "text": "Refund started for order A-17."}
    assert bad.is_error and "non-empty" in bad.content[0].text
    assert [m.content for m in transcript if m.role == "user"] == ["hello", "refund"]


async def test_a_client_of_an_earlier_revision_is_asked_by_elicitation_or_told_how_to_answer(
        client: Client, task_queue: str) -> None:
    async def person(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "B-2"})

    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        server = door(client, task_queue).server()
        async with McpClient(server, mode="legacy", elicitation_callback=person) as mcp:
            elicited = await mcp.call_tool("shop", {"message": "refund"})
        async with McpClient(server, mode="legacy") as mcp:  # no elicitation: the text asks
            told = await mcp.call_tool("shop", {"message": "refund"})
            thread = told.structured_content["thread_id"]
            answered = await mcp.call_tool("shop", {"message": "C-3", "thread_id": thread})

    assert elicited.content[0].text == "Refund started for order B-2."
    assert told.structured_content["status"] == "input_required"
    assert told.content[0].text.startswith("[shop] Which order?\n(answer with this tool: thread_id")
    assert answered.content[0].text == "Refund started for order C-3."


async def test_a_slow_turn_returns_working_and_a_later_call_by_thread_id_gets_its_answer(
        client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        async with McpClient(door(client, task_queue, wait_seconds=0).server()) as mcp:
            first = await mcp.call_tool("shop", {"message": "hello"})
        thread = first.structured_content["thread_id"]
        # another server (a restart): nothing of the first is needed
        async with McpClient(door(client, task_queue).server()) as mcp:
            later = await mcp.call_tool("shop", {"thread_id": thread})
            other_team = await mcp.call_tool("acme", {"message": "x"})

    assert first.structured_content["status"] == "working" and not first.is_error
    assert later.structured_content == {"thread_id": thread, "status": "completed", "text": "you said 'hello'"}
    assert other_team.is_error and "no tool 'acme'" in other_team.content[0].text


def over_http(url: str, token: str = "s3cret") -> McpClient:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return McpClient(streamable_http_client(f"{url}/mcp", http_client=http))


async def test_streamable_http_on_the_gateway_survives_a_gateway_restart_between_question_and_answer(
        client: Client, task_queue: str) -> None:
    options: dict[str, Any] = {"tokens": ["s3cret"], "teams": ["shop"], "cards": [TeamCard("shop", "Refunds.", ())]}
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        async with running_gateway(client, task_queue, **options) as url:
            async with over_http(url) as mcp:
                tools = await mcp.list_tools()
                asked = await mcp.session.call_tool("shop", {"message": "refund"}, allow_input_required=True)
            async with httpx.AsyncClient() as raw:
                no_token = await raw.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                          headers={"Accept": "application/json, text/event-stream"})
                not_rpc = await raw.post(f"{url}/mcp", content=b'{"jsonrpc": "2.0", "id": 1',
                                         headers={"Authorization": "Bearer s3cret", "Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream"})
        assert isinstance(asked, types.InputRequiredResult)
        (qid, form), = (asked.input_requests or {}).items()
        async with running_gateway(client, task_queue, **options) as url:  # a new gateway process
            async with over_http(url) as mcp:
                done = await mcp.session.call_tool(
                    "shop", {"message": "refund"}, allow_input_required=True, request_state=asked.request_state,
                    input_responses={qid: types.ElicitResult(action="accept", content={"answer": "D-4"})})

    assert [t.name for t in tools.tools] == ["shop"] and tools.tools[0].description == "Refunds."
    assert form.params.message == "[shop] Which order?"
    assert isinstance(done, types.CallToolResult) and done.content[0].text == "Refund started for order D-4."
    assert no_token.status_code == 401
    assert not_rpc.status_code == 400 and not_rpc.json()["error"]["code"] == -32700  # JSON-RPC parse error


async def test_durable_teams_mcp_over_stdio_lists_and_calls_the_team(client: Client, task_queue: str) -> None:
    command = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT), env=cli_env(client),
        args=["-m", "durable_teams", "mcp", "--team", "tests.test_mcp_door:SHOP_TEAM", "--task-queue", task_queue])

    async def person(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "E-5"})

    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        async with McpClient(command, elicitation_callback=person) as mcp:
            tools = await mcp.list_tools()
            done = await mcp.call_tool("shop", {"message": "refund"})

    assert [t.name for t in tools.tools] == ["shop"]
    assert tools.tools[0].description == ("The shop team, agents handing off to each other "
                                          "(shop: Refunds and orders.). Send it a message.")
    assert done.content[0].text == "Refund started for order E-5."


INSPECTOR = os.environ.get("DURABLE_TEAMS_MCP_INSPECTOR")  # node_modules/.bin/mcp-inspector of
# `npm install @modelcontextprotocol/inspector` (a download: not done by the test itself)


async def inspector(*args: str, env: dict[str, str]) -> Any:
    if INSPECTOR is None:
        system_program_missing("set DURABLE_TEAMS_MCP_INSPECTOR to the MCP Inspector's binary "
                               "(npm install @modelcontextprotocol/inspector)",
                               "DURABLE_TEAMS_REQUIRE_MCP_INSPECTOR")
    proc = await asyncio.create_subprocess_exec(INSPECTOR, "--cli", *args, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_the_mcp_inspector_cli_lists_and_calls_the_team_over_stdio_and_http(client: Client, task_queue: str) -> None:
    env = cli_env(client)
    stdio = [sys.executable, "-m", "durable_teams", "mcp", "--team", "tests.test_mcp_door:SHOP_TEAM",
             "--task-queue", task_queue]
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        listed = await inspector(*stdio, "--method", "tools/list", env=env | {"PYTHONPATH": str(ROOT)})
        called = await inspector(*stdio, "--method", "tools/call", "--tool-name", "shop",
                                 "--tool-arg", "message=hello", env=env | {"PYTHONPATH": str(ROOT)})
        async with running_gateway(client, task_queue, teams=["shop"], cards=[card_of(SHOP.spec)]) as url:
            over_http = await inspector(f"{url}/mcp", "--transport", "http", "--method", "tools/call",
                                        "--tool-name", "shop", "--tool-arg", "message=hi", env=env)

    assert [t["name"] for t in listed["tools"]] == ["shop"]
    assert called["content"][0]["text"] == "you said 'hello'"
    assert over_http["structuredContent"]["status"] == "completed"
    assert over_http["content"][0]["text"] == "you said 'hi'"


def doc_example(page: str, heading: str) -> str:
    """The first python block after `heading` on docs/`page`, as written."""
    text = (ROOT / "docs" / page).read_text("utf-8")
    section = text[text.index(heading):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("```\n", start)]


async def test_the_sdk_example_of_the_docs_finishes_the_support_flow_as_written(
        client: Client, task_queue: str) -> None:
    """docs/mcp-server.md's program, run as written against `durable-teams mcp` over stdio: its
    callback answers the question and the refund's approval, and the call ends completed. The
    server gets the Temporal address and the queue only through the example's own `env`."""
    from durable_teams.examples import support

    code = doc_example("mcp-server.md", "## With the `mcp` SDK")
    env = cli_env(client, task_queue) | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, cwd=str(ROOT), env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(b"A-1042\ny\n"), 180)
    printed = out.decode()  # input()'s prompts end no line: the next print follows them
    assert proc.returncode == 0, err.decode()
    assert printed.startswith("['faang', 'support', 'acme', 'faang-teams']\n"), printed
    asked = printed.index("[triage_agent] Sorry to hear that! What's your order number?")
    approval = printed.index("execute_refund", asked)  # the approval names the refund
    assert printed.index("'status': 'completed'", approval) > approval, printed
    assert printed.rstrip().endswith(f"'text': {support.ANSWER!r}}}"), printed
