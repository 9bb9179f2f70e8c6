"""The CLI as a person uses it: the demos and `chat`, driven through standard input."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from durable_teams.examples import acme, support
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest

from .cli_process import cli
from .conftest import running_worker
from .fake_openai import FakeOpenAI, completion

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


async def test_faang_demo_prints_the_answer_and_workflow_id(client: Client) -> None:
    out = await cli(client, "demo")
    assert "Model: SCRIPTED" in out
    assert "Answer: The combined headcount of the FAANG companies in 2024 is 1,977,586." in out
    assert "Workflow id: faang-demo-" in out
    assert "[math_expert] add(" in out


async def test_faang_demo_on_a_live_endpoint_ends_without_a_word_on_stderr(client: Client) -> None:
    """With OPENAI_BASE_URL set the demo calls that endpoint and closes its connections when it
    ends (an unclosed HTTP session would be reported on stderr at exit)."""
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host}
    env.pop("OPENAI_API_KEY", None)
    with FakeOpenAI() as fake:
        fake.reply(completion(content="The supervisor answers by itself."))
        env["OPENAI_BASE_URL"] = fake.base_url
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "durable_teams", "demo", cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert (proc.returncode, err.decode()) == (0, "")
    assert "Model: live, OpenAI-compatible endpoint at http://127.0.0.1:" in out.decode()
    assert "Answer: The supervisor answers by itself." in out.decode()


async def test_support_demo_takes_answers_at_the_terminal(client: Client) -> None:
    out = await cli(client, "demo", "support", stdin="Order 4711\ny\n")
    assert "Question: Sorry to hear that! What's your order number?" in out
    assert "Approval needed: execute_refund(" in out
    assert "[ask_human result] Order 4711" in out
    assert "[execute_refund result] success" in out
    assert "Answer: Your refund is on its way." in out


async def test_support_demo_reads_an_approval_strictly(client: Client) -> None:
    """A conditional yes at the demo's prompt is asked again (it approved: "y" was all it read);
    the plain yes after it approves, one refund."""
    out = await cli(client, "demo", "support", stdin="Order 4711\nyes if it is under $20\nok, why?\ny\n")
    assert out.count("Please answer yes or no: may execute_refund run?") == 2
    assert out.count("[execute_refund result] success") == 1
    assert "Answer: Your refund is on its way." in out


def acme_script() -> dict[str, list[Step]]:
    """The ACME example's script, plus one more reply from repairs for a fourth turn."""
    return {**acme.SCRIPT, "repairs": [*acme.SCRIPT["repairs"], say("Glad I could help. Anything else?")]}


async def test_chat_acme_approval_quit_and_continue_the_thread(client: Client, task_queue: str) -> None:
    """Three turns at the terminal (a handoff to sales, sales again, then a refund the user
    approves with "y"), /quit leaves the thread running, and a second session on the same
    thread is answered by the agent that was active when the first one left."""
    support.REFUNDS.clear()
    model = ScriptedModel(acme_script())
    async with running_worker(client, task_queue, [acme.build().compile()], model):
        first = await cli(client, "chat", "acme", task_queue=task_queue, stdin=(
            "I keep failing to catch a roadrunner. Want to buy something.\n"
            "How much is it?\n"
            "\n"  # an empty line is not a turn
            "Never mind. My boots fell apart, refund them.\n"
            "y\n"
            "/quit\n"))
        thread = re.search(r"\(new thread (acme-chat-\w+)\)", first)
        assert thread is not None, first
        handle = client.get_workflow_handle(thread.group(1))
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        agents_in_first = [r[0].agent for r in model.requests]
        second = await cli(client, "chat", "acme", "--thread", handle.id, task_queue=task_queue,
                           stdin="Thanks!\n/quit\n")
        status = await handle.query(TeamWorkflow.status)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    replies = [re.sub(r"^(you> )+", "", line) for line in first.splitlines() if "] " in line]
    assert replies == [
        f"[sales] {acme.SCRIPT['sales'][0].content}",
        f"[sales] {acme.SCRIPT['sales'][1].content}",
        '? [repairs] approve execute_refund({"item_id": "item_132612938", '
        '"reason": "fell apart after a week"})? [y/n] [repairs] Done: your boots are refunded.',
    ]
    assert first.count("you> ") == 5  # one prompt per line typed, up to /quit
    assert f"(left thread {handle.id} running; continue with: durable-teams chat acme --thread {handle.id})" in first
    assert support.REFUNDS == [("item_132612938", "fell apart after a week")]
    assert agents_in_first == ["triage", "sales", "sales", "sales", "triage", "repairs", "repairs", "repairs"]
    # The second session: same thread, and repairs (active when the first left) answers at once.
    assert f"(continuing thread {handle.id})" in second and "(new thread" not in second
    assert "[repairs] Glad I could help. Anything else?" in second
    assert [r[0].agent for r in model.requests[len(agents_in_first):]] == ["repairs"]
    assert (status.turns, status.active_agent, status.pending) == (4, "repairs", [])


def desk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if last["role"] == "user":
        return call("ask_human", question="Which order do you mean?", suggestions=["A-17", "B-42"])
    return say(f"Order {last['content']} is on its way.")


async def test_chat_answers_a_question_and_close_ends_the_thread(client: Client, task_queue: str) -> None:
    """An `ask_human` question prints with its suggestions and takes the next line as the
    answer; /close ends the conversation."""
    desk = Agent("desk", "Help with orders.", tools=["ask_human"])
    team = Swarm([desk], name="desk").compile()
    thread = f"desk-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [team], ScriptedModel(desk_script)):
        out = await cli(client, "chat", "desk", "--thread", thread, task_queue=task_queue,
                        stdin="Where is my order?\nB-42\n/close\n")
        result = await client.get_workflow_handle_for(TeamWorkflow.run, thread).result()
        again = await cli(client, "chat", "desk", "--thread", thread, task_queue=task_queue,
                          stdin="hello?\n", returncode=1)
    assert f"thread {thread} has ended (COMPLETED)" in again  # not a new conversation, silently
    assert f"(new thread {thread})" in out
    assert "? [desk] Which order do you mean? (A-17 | B-42)\n> [desk] Order B-42 is on its way." in out
    assert out.rstrip().endswith("you> (conversation closed)")
    assert (result.turns, result.agent, result.answer) == (1, "desk", "Order B-42 is on its way.")


async def test_chat_with_a_team_the_worker_lacks_says_why(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        out = await cli(client, "chat", "acmee", task_queue=task_queue, stdin="hello\n", returncode=1)
    assert "No team named 'acmee' on this worker (known: acme)." in out
    assert "Traceback" not in out


@pytest.mark.parametrize("command", ["status", "transcript", "follow"])
async def test_an_unknown_workflow_id_is_one_readable_line(client: Client, command: str) -> None:
    out = await cli(client, command, "no-such-conversation", returncode=1)
    assert "no conversation with workflow id 'no-such-conversation'" in out
    assert "Traceback" not in out
