"""Time travel as a person meets it at the terminal and in docs/time-travel.md: the page's
checkpoints are the shipped support example's, its breakpoint example can edit arguments;
`status` of a fork says where it came from and names the agent that asks; `fork` says when no
worker polls and refuses an id in use in one line; `rewind` says what it abandoned."""

from __future__ import annotations

import argparse
import re
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

from durable_teams.cli import time_commands
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.start import start_conversation
from durable_teams.client.time_travel import list_checkpoints
from durable_teams.examples import support
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.breakpoints import pauses
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput, Question

from .cli_process import ROOT, cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .time_travel_team import support as refund_team
from .time_travel_team import support_model
from .waiting import NotYet, questions, until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

PAGE = ROOT / "docs" / "time-travel.md"
CHECKPOINT = re.compile(r"^[0-9a-f]{8}\.\d+((?:t|e)\d+)?$")


def documented_checkpoints() -> list[str]:
    """The sample output of `durable-teams checkpoints` on docs/time-travel.md (the block after
    its mark)."""
    text = PAGE.read_text("utf-8")
    start = text.index("```\n", text.index("<!-- checkpoints of the support example")) + len("```\n")
    return text[start:text.index("\n```", start)].splitlines()


def columns(line: str) -> tuple[str, str]:
    """A `checkpoints` line without its history event numbers: the id's turn suffix, and the
    rest (kind, agent, what happened). Event numbers depend on when answers arrive."""
    point, rest = line.split(" ", 1)
    match = CHECKPOINT.match(point)
    assert match, line
    return match.group(1) or "", rest.strip()


async def asked_one(handle: WorkflowHandle, kind: str) -> Question:
    async def check() -> Question:
        pending = [q for q in await questions(handle) if q.kind == kind]
        if not pending:
            raise NotYet(await questions(handle))
        return pending[0]
    return await until(check, f"a {kind} on {handle.id}")


async def start_support(client: Client, task_queue: str) -> WorkflowHandle:
    """The support example started as `durable-teams run support "<its question>"` does."""
    return await start_conversation(client, "support", ConversationInput(team_name="support", task=support.QUESTION),
                                    id=f"support-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def test_the_pages_checkpoints_are_the_support_examples_and_status_names_the_asker_and_the_origin(
        client: Client, task_queue: str) -> None:
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        handle = await start_support(client, task_queue)
        order = await asked_one(handle, "question")
        asking = await run_cli("status", handle.id, env=env)
        await send_reply(client, handle.id, order.question_id, text="A-1042")
        approval = await asked_one(handle, "approval")
        await send_reply(client, handle.id, approval.question_id, approved=True)
        await handle.result()
        listed = await run_cli("checkpoints", handle.id, env=env)
        start = next(p for p in await list_checkpoints(client, handle.id) if p.kind == "turn")
        forked = await run_cli("fork", handle.id, "--at", start.id, "--message", "My gloves tore.", env=env)
        fork_id = forked.out.splitlines()[0]
        fork_status = await run_cli("status", fork_id, env=env)
        await asked_one(client.get_workflow_handle(fork_id), "question")  # the script plays the turn again

    assert listed.code == 0, listed
    assert [columns(line) for line in listed.out.splitlines()] == [columns(line) for line in documented_checkpoints()]
    assert "active agent: triage_agent" in asking.out, asking  # the supervisor asks (no swarm agent active)
    assert forked.code == 0 and forked.out.splitlines()[1] == (
        f"forked from {handle.id}@{start.id}, first turn: My gloves tore.")
    assert f"\nforked from: {handle.id}@{start.id}\n" in fork_status.out, fork_status


async def test_fork_says_when_no_worker_polls_and_refuses_an_id_in_use_in_one_line(
        client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    team = refund_team()
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)):
        handle = await client.start_workflow("TeamWorkflow", ConversationInput(team=team.spec, single_turn=False),
                                             id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await send_turn(client, handle.id, "hello")
    # the worker has stopped; the server lists a stopped worker's polls for a while (its
    # identity is "lately seen" for 90 s), so the command runs here with the queue seen empty
    asked_about: list[str] = []

    async def no_workers(_: Client, queue: str) -> list[str]:
        asked_about.append(queue)
        return []

    monkeypatch.setenv("TEMPORAL_ADDRESS", env["TEMPORAL_ADDRESS"])
    monkeypatch.setattr(time_commands, "workers_on", no_workers)
    code = await time_commands.cmd_fork(argparse.Namespace(workflow_id=handle.id, at=None, message=None,
                                                           fork_id=f"{handle.id}-b"))
    forked = capsys.readouterr()
    again = await run_cli("fork", handle.id, "--id", f"{handle.id}-b", env=env)

    assert code == 0 and forked.out.splitlines()[0] == f"{handle.id}-b", forked
    assert asked_about == [task_queue]
    assert forked.err.strip() == (f"No worker is polling task queue {task_queue!r}: the conversation waits "
                                  "and runs when one starts (durable-teams worker).")
    assert one_line_failure(again) == (
        f"durable-teams: a conversation with workflow id '{handle.id}-b' exists already: give the "
        "fork another --id (or none: a new one is made)")


def asking_model(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """Asks which order at "refund"; answers anything else."""
    last = messages[-1]
    if last["role"] == "user" and last["content"] == "refund":
        return call("ask_human", question="Which order?")
    return say(f"heard: {last['content']}")


async def test_rewind_past_a_turn_waiting_at_a_question_says_what_it_abandoned(
        client: Client, task_queue: str) -> None:
    team = Swarm([Agent("desk", "Help.", tools=["ask_human"])], name="desk").compile()
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [team], ScriptedModel(asking_model)):
        handle = await start_conversation(client, "desk", ConversationInput(team_name="desk", single_turn=False),
                                          id=f"desk-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        await send_turn(client, handle.id, "hello")
        await handle.signal("post_message", args=[{"text": "refund"}])
        order = await asked_one(handle, "question")
        end_of_1 = next(p for p in await list_checkpoints(client, handle.id) if p.kind == "turn_end")
        rewound = await run_cli("rewind", handle.id, "--to", end_of_1.id, env=env)

    assert rewound.code == 0, rewound
    assert rewound.out.splitlines()[1:] == [
        "abandoned: turn 2 ('refund'), not answered",
        f"abandoned: question {order.question_id} of desk: Which order? (it is no longer asked)"]


def test_the_breakpoint_example_pauses_before_a_tool_whose_arguments_can_be_edited() -> None:
    """A tool that needs approval is asked by its approval (yes or no, no edit; the breakpoint
    before it is not asked besides), so the page's breakpoint before a tool names one that runs
    without approval."""
    text = PAGE.read_text("utf-8")
    start = text.index("```python\n", text.index("## Breakpoints")) + len("```python\n")
    names: dict[str, object] = {}
    exec(text[start:text.index("```\n", start)], names)  # noqa: S102 - the page's own example
    spec = names["team"].compile().spec  # type: ignore[attr-defined]
    paused = [tool for tool in spec.agents["support"].tools if pauses(spec, "before", "support", tool)]
    assert paused == ["look_up_item"]
    assert [spec.tools[tool].needs_approval for tool in paused] == [False]
