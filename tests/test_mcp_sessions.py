"""MCP sessions and failures over a real stdio server process (tests/mcp_server.py).

A worker keeps one session per server: a stateful server keeps its state across calls, a
server that died is reopened, the session closes with the worker; `session="per_call"` starts
a fresh server for every call. A server that dies in the middle of a call leaves the model
told the tool may or may not have run (an idempotent server is retried); a server command that
does not exist fails the conversation with a line saying so, in the CLI too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (it needs Python 3.11+)")

from temporalio.client import Client, WorkflowHandle

from durable_teams.activities import mcp_calls as mcp_activities
from durable_teams.activities.mcp_calls import MCPActivities
from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.mcp_servers import MCPHttp, MCPStdio
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.mcp_tools import MCPCall
from durable_teams.workflows.state import ConversationInput

from . import mcp_server
from .cli_process import cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .inspect_history import activity_names
from .mcp_helpers import SERVER, http_server, tool_messages
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

NOT_RETRIED = "The tool may or may not have completed; it was not retried."


def team(*servers: MCPStdio | MCPHttp) -> Swarm:
    return Swarm([Agent("clerk", "You count.", mcp=list(servers))],
                 name=f"mcp-{uuid.uuid4().hex[:6]}")


def orders(**options: object) -> MCPStdio:
    return MCPStdio("orders", sys.executable, [SERVER], **options)  # type: ignore[arg-type]


async def start(client: Client, task_queue: str, swarm: Swarm, task: str | None = None) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=swarm.compile().spec, task=task,
                                            single_turn=task is not None),
        id=f"mcp-session-{uuid.uuid4().hex[:6]}", task_queue=task_queue)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def killed(pid: int) -> None:
    """Kill a server process and wait until it is gone (no event tells this process so)."""
    os.kill(pid, signal.SIGKILL)
    async def dead() -> bool:
        return not alive(pid)
    await until(dead, f"MCP server process {pid} gone", every=0.01)


async def test_a_persistent_session_keeps_its_state_and_a_per_call_one_starts_fresh(
        client: Client, task_queue: str) -> None:
    swarm = team(
        MCPStdio("kept", sys.executable, [SERVER], tool_prefix="kept_"),
        MCPStdio("fresh", sys.executable, [SERVER], tool_prefix="fresh_", session="per_call"))
    script = [call("kept_increment"), call("kept_increment"), call("kept_increment"), call("kept_pid"),
              call("fresh_increment"), call("fresh_increment"), call("fresh_pid"), call("fresh_pid"),
              say("Counted.")]
    compiled = swarm.compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel({"clerk": script})):
        handle = await start(client, task_queue, swarm, "count")
        await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, True)
        names = await activity_names(handle)
        results = [content for _, content, _ in tool_messages(transcript)]
        kept_pid = int(results[3])
        assert alive(kept_pid)  # the worker keeps its session, and so the server, between calls
    assert results[:3] == ["1", "2", "3"]  # one server process kept its count
    assert results[4:6] == ["1", "1"]  # each call had a new process
    assert results[6] != results[7] and kept_pid not in (int(results[6]), int(results[7]))
    assert names.count("list_mcp_tools") == 2  # the tool lists are still recorded, once per server
    assert not alive(kept_pid)  # the worker stopped: its session closed and the server ended


async def test_concurrent_first_calls_open_one_session_and_share_it() -> None:
    mcp = MCPActivities({"orders": orders()})

    def increment(n: int) -> MCPCall:
        return MCPCall(server="orders", tool="increment", arguments="{}", idempotency_key=str(n),
                       agent="clerk")

    try:
        results = await asyncio.gather(*(mcp.call_mcp_tool(increment(n)) for n in range(20)))
    finally:
        await mcp.close()
    assert sorted(int(r.content) for r in results) == list(range(1, 21))  # one process counted all
    with pytest.raises(ValueError, match="session must be 'persistent' or 'per_call', not 'pooled'"):
        orders(session="pooled")


async def test_a_server_killed_between_calls_is_started_again(client: Client, task_queue: str) -> None:
    swarm = team(orders())
    model = ScriptedModel({"clerk": [call("increment"), call("pid"), say("One."),
                                     call("increment"), call("pid"), say("One again.")]})
    async with running_worker(client, task_queue, [swarm.compile()], model):
        handle = await start(client, task_queue, swarm)
        await send_turn(client, handle.id, "count")
        first = tool_messages(await handle.query(TeamWorkflow.transcript, True))
        await killed(int(first[1][1] or 0))
        second = await send_turn(client, handle.id, "again")
        later = tool_messages(await handle.query(TeamWorkflow.transcript, True))[2:]
        await handle.signal(TeamWorkflow.close)
        await handle.result()
    assert second.text == "One again."
    assert [first[0], later[0]] == [("increment", "1", "message")] * 2  # a new process, a new count
    assert later[1][2] == "message" and later[1][1] != first[1][1]


async def test_a_kept_http_session_whose_server_stopped_says_the_call_did_not_run(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session learns that its server went away from the call's own request, which could
    not connect: nothing was sent, so the model is told the tool did not run."""
    monkeypatch.setattr(mcp_activities, "CONNECT_BACKOFF_SECONDS", 0.01)
    model = ScriptedModel({"clerk": [call("lookup_order", order_id="1"), say("Found."),
                                     call("lookup_order", order_id="2"), say("It is down.")]})
    server = http_server(mcp_server.build())
    swarm = team(MCPHttp("orders", await server.__aenter__(), max_attempts=1))
    running = True
    try:
        async with running_worker(client, task_queue, [swarm.compile()], model):
            handle = await start(client, task_queue, swarm)
            await send_turn(client, handle.id, "order 1?")
            running = False
            await server.__aexit__(None, None, None)
            reply = await send_turn(client, handle.id, "order 2?")
            transcript = await handle.query(TeamWorkflow.transcript, True)
            await handle.signal(TeamWorkflow.close)
            await handle.result()
    finally:
        if running:
            await server.__aexit__(None, None, None)
    assert reply.text == "It is down."
    assert tool_messages(transcript) == [
        ("lookup_order", "Order 1: hiking boots, delivered.", "message"),
        ("lookup_order", "Error: MCP server 'orders' could not be reached (1 attempts): "
                         "ConnectError: All connection attempts failed. lookup_order did not run.",
         "error")]


@pytest.mark.parametrize("session", ["persistent", "per_call"])
async def test_a_server_that_dies_mid_call_may_have_run_and_is_started_again(
        client: Client, task_queue: str, tmp_path: Path, session: str) -> None:
    log = tmp_path / "calls.log"
    swarm = team(orders(env={"MCP_CALL_LOG": str(log)}, session=session))
    model = ScriptedModel({"clerk": [call("crash"), call("increment"), say("It crashed.")]})
    async with running_worker(client, task_queue, [swarm.compile()], model):
        handle = await start(client, task_queue, swarm, "crash it")
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, True)
    assert result.answer == "It crashed."
    assert tool_messages(transcript) == [
        ("crash", "Error: crash failed: the connection to MCP server 'orders' closed during the "
                  f"call. {NOT_RETRIED}", "error"),
        ("increment", "1", "message"),  # the next call has a server again
    ]
    assert log.read_text().splitlines() == ["crash"]  # it ran once: not run again


async def test_an_idempotent_server_that_died_mid_call_is_retried_and_answers(
        client: Client, task_queue: str, tmp_path: Path) -> None:
    log, marker = tmp_path / "calls.log", tmp_path / "crashed-once"
    swarm = team(orders(env={"MCP_CALL_LOG": str(log)}, idempotent=True, max_attempts=3,
                        retry_interval_seconds=0.05))
    model = ScriptedModel({"clerk": [call("crash", marker=str(marker)), say("It came back.")]})
    async with running_worker(client, task_queue, [swarm.compile()], model):
        handle = await start(client, task_queue, swarm, "crash it once")
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, True)
        names = await activity_names(handle)
    assert result.answer == "It came back."
    assert tool_messages(transcript) == [("crash", "Back again.", "message")]
    assert log.read_text().splitlines() == ["crash", "crash"]  # died once, answered on the retry
    assert names.count("call_mcp_tool") == 1  # one activity, two attempts


async def test_a_server_command_that_does_not_exist_fails_the_conversation_saying_so(
        client: Client, task_queue: str) -> None:
    ghost = MCPStdio("ghost", "no-such-mcp-server-command")  # default: 5 attempts, not needed
    swarm = team(ghost)
    wid = f"mcp-ghost-{uuid.uuid4().hex[:6]}"
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [swarm.compile()], ScriptedModel({"clerk": [say("never")]})):
        ran = await run_cli("run", swarm.name, "hello", "--id", wid, env=env)
        status = await run_cli("status", wid, env=env)
    transcript = await run_cli("transcript", wid, env=env)  # rebuilt from history: no worker
    reason = ("MCP server 'ghost' could not list its tools: could not start "
              "'no-such-mcp-server-command': FileNotFoundError: [Errno 2] No such file or directory: "
              "'no-such-mcp-server-command'")
    assert one_line_failure(ran) == f"durable-teams: conversation {wid} failed: {reason}"
    assert one_line_failure(status) == one_line_failure(transcript) == one_line_failure(ran)
    assert status.out == f"workflow: {wid} (FAILED)\n"
