"""The CLI when no worker runs, or no server: it says so at once and does what it still can."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.client.server_address import port_open
from durable_teams.client.server_state import no_worker_note
from durable_teams.examples import faang
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .cli_process import ROOT, Outcome, cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if last["role"] == "user":
        return call("ask_human", question="Which order do you mean?", suggestions=["A-17", "B-42"])
    return say(f"Order {last['content']}\nis on its way.")


DESK = Swarm([Agent("desk", "Help with orders.", tools=["ask_human"])], name="desk").compile()


async def first_lines(env: dict[str, str], count: int, *args: str) -> list[str]:
    """The first `count` lines a long-running command prints; then it is stopped."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    try:
        return [(await asyncio.wait_for(proc.stdout.readline(), 60)).decode() for _ in range(count)]
    finally:
        proc.kill()
        await proc.wait()


async def test_run_with_no_worker_says_so_and_no_wait_prints_only_the_id(client: Client) -> None:
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    env = cli_env(client, queue)
    wid = f"faang-{uuid.uuid4().hex[:8]}"
    started = await run_cli("run", "faang", faang.QUESTION, "--no-wait", "--id", wid, env=env)
    assert (started.code, started.out) == (0, f"{wid}\n")  # id=$(durable-teams run ... --no-wait)
    assert started.err == no_worker_note(queue) + "\n"
    assert no_worker_note(queue) == (
        f"No worker is polling task queue '{queue}': the conversation waits and runs when one "
        "starts (durable-teams worker).")
    waiting = await first_lines(env, 2, "run", "faang", "hello", "--id", f"{wid}-2")
    assert waiting == [f"workflow id: {wid}-2\n", no_worker_note(queue) + "\n"]

    status = await run_cli("status", wid, env=env, timeout=60)
    assert status.out == f"workflow: {wid} (RUNNING)\n{no_worker_note(queue)}\n"
    answer = await run_cli("answer", wid, "42", env=env, timeout=60)
    assert one_line_failure(answer) == (
        f"durable-teams: no question of {wid} is known without a worker: none has asked one so "
        "far (start a worker: durable-teams worker)")
    for command in ("transcript", "follow"):
        line = one_line_failure(await run_cli(command, wid, env=env, timeout=60))
        assert f"no worker is polling task queue '{queue}'" in line
    described = await client.get_workflow_handle(wid).describe()
    assert await described.static_summary() == f"faang: {faang.QUESTION}"  # the Web UI's line


async def test_pending_and_answer_need_no_worker(client: Client, task_queue: str) -> None:
    """A question asked while a worker ran is listed, and answered, after the worker stopped:
    the answer is queued (the signal is durable) and used when a worker runs again."""
    env = cli_env(client, task_queue, DURABLE_TEAMS_ANSWER_WAIT="1")
    wid = f"desk-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="desk", task="Where is my order?"),
            id=wid, task_queue=task_queue)
        asked = await pending_question(handle)
    listed = await run_cli("pending", env=env, timeout=60)  # the old CLI queried: 30 s, nothing
    assert (f"{wid}  q1  asked by desk at {asked.asked_at:%Y-%m-%d %H:%M:%S} UTC\n"
            "  Question: Which order do you mean?\n"
            "  Suggestions: A-17 | B-42\n"
            f"  Reply: durable-teams answer {wid} \"<your answer>\" --question q1\n") in listed.out
    approve = await run_cli("approve", wid, env=env, timeout=60)
    assert one_line_failure(approve) == (
        f"durable-teams: q1 is a question, not an approval: answer it with durable-teams answer "
        f"{wid} \"<your answer>\" --question q1")
    # The worker just stopped, so the server still lists its poller: `answer` waits 1 s (the
    # bounded wait) for a worker to take the answer, then queues it and says why.
    answered = await run_cli("answer", wid, "B-42", env=env, timeout=60)
    assert answered.out == ("Answer to q1 queued: no worker took it within 1 s; it will be "
                            "validated when one starts.\n"), answered
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        result = await handle.result()
    assert result.answer == "Order B-42\nis on its way."


async def test_a_finished_conversation_is_read_without_a_worker(client: Client, task_queue: str) -> None:
    env = cli_env(client, task_queue, DURABLE_TEAMS_ANSWER_WAIT="5")
    wid = f"desk-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="desk", task="Where is my order?"),
            id=wid, task_queue=task_queue)
        await pending_question(handle)
        answered = await run_cli("answer", wid, "A-17", env=env, timeout=60)
        await handle.result()
        live = await handle.query(TeamWorkflow.transcript, True)
    assert answered.out == "Answered q1.\n"
    # No worker from here on: every read comes from the server at once.
    status, transcript, followed = await asyncio.gather(*(
        run_cli(*args, env=env, timeout=60)
        for args in (("status", wid), ("transcript", wid, "--full"), ("follow", wid))))
    assert status.out == (f"workflow: {wid} (COMPLETED)\nturns: 1  model calls: 2\n"
                          "last reply [desk, completed]: Order A-17\nis on its way.\n"
                          "usage: 0 in / 0 out tokens, 2 model calls\n"
                          "  turn 1: 0 in / 0 out tokens, 2 model calls\n"
                          "  desk: 0 in / 0 out tokens, 2 model calls\n")
    assert transcript.out.splitlines()[0] == "[user] Where is my order?"
    assert len(transcript.out.splitlines()) == len(live) + 1  # the answer spans two lines
    assert followed.out.splitlines() == [
        "user_message  [user] Where is my order?",
        'question      [desk] ask_human({"question": "Which order do you mean?", "suggestions": ["A-17", "B-42"]})',
        "tool_response [ask_human] A-17",
        "ai_message    [desk] Order A-17",
        "                     is on its way.",  # a multi-line text stays under its first line
        "(workflow completed)",
    ]


async def test_read_commands_never_start_a_server(tmp_path: Path) -> None:
    port = free_port()
    embedded = cli_env(None, DURABLE_TEAMS_PORT=str(port), DURABLE_TEAMS_DB=str(tmp_path / "t.db"))
    remote = cli_env(None, TEMPORAL_ADDRESS=f"127.0.0.1:{port}")
    commands = [("status", "x"), ("follow", "x"), ("pending",), ("answer", "x", "yes"),
                ("run", "faang", "hi"), ("chat", "acme")]
    two_at_a_time = asyncio.Semaphore(2)  # a CLI start is CPU-bound; the machine is shared

    async def attempt(env: dict[str, str], *args: str) -> Outcome:
        async with two_at_a_time:
            return await run_cli(*args, env=env, timeout=90)

    outcomes = await asyncio.gather(*(attempt(embedded, *c) for c in commands),
                                    attempt(remote, "status", "x"))
    for outcome in outcomes[:-1]:
        assert one_line_failure(outcome) == (
            f"durable-teams: no Temporal server at 127.0.0.1:{port} (start one: durable-teams server-start)")
    assert one_line_failure(outcomes[-1]) == f"durable-teams: no Temporal server at 127.0.0.1:{port}"
    assert not port_open("127.0.0.1", port) and not (tmp_path / "t.db").exists()
