"""Every CLI failure is one readable line and exit code 1; scripted runs say they are scripted;
`--help` describes every command; the Web UI's summaries say what each step is."""

from __future__ import annotations

import re
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_teams.cli.command_line import commands, parser
from durable_teams.client.server_state import SCRIPTED_NOTE
from durable_teams.examples import faang
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import cli_env, one_line_failure, run_cli
from .conftest import running_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def test_failures_are_one_line(client: Client, task_queue: str) -> None:
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
        unknown = await run_cli("run", "nosuch", "hello", "--id", f"nosuch-{task_queue}", env=env)
        failed_status = await run_cli("status", f"nosuch-{task_queue}", env=env)
    not_utf8 = await run_cli("run", "faang", b"caf\xe9 au lait", env=env)
    assert one_line_failure(unknown) == (
        f"durable-teams: conversation nosuch-{task_queue} failed: No team named 'nosuch' on this "
        "worker (known: faang).")
    assert unknown.out == f"workflow id: nosuch-{task_queue}\n{SCRIPTED_NOTE}\n"
    assert one_line_failure(failed_status) == one_line_failure(unknown)
    assert one_line_failure(not_utf8) == (
        "durable-teams: the task is not valid UTF-8 text (undecodable byte at position 3)")
    assert not_utf8.out == ""  # nothing was started


async def test_unknown_team_exits_cleanly_every_time(client: Client, task_queue: str) -> None:
    """An abort at interpreter exit is intermittent: five runs in a row end cleanly."""
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
        for n in range(5):
            outcome = await run_cli("run", "nosuch", "hello", "--id", f"nosuch-{n}-{task_queue}", env=env)
            assert one_line_failure(outcome).startswith("durable-teams: conversation nosuch-")


async def test_a_scripted_run_says_so_and_help_uses_the_recorded_question(
    client: Client, task_queue: str
) -> None:
    env = cli_env(client, task_queue)
    model = ScriptedModel(faang.SCRIPT)
    wid = f"faang-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [faang.build().compile()], model):
        ran = await run_cli("run", "faang", "what's 2+2?", "--id", wid, env=env)
    assert ran.out.splitlines()[:3] == [
        f"workflow id: {wid}", SCRIPTED_NOTE,
        "[supervisor] The combined headcount of the FAANG companies in 2024 is 1,977,586."]
    helped = await run_cli("--help", env=env)
    assert f'durable-teams run faang "{faang.QUESTION}"' in helped.out
    assert "2+2" not in helped.out
    # Every command has a line that says what it does.
    named = commands(parser())
    described = dict(re.findall(r"^    ([a-z-]+)\s+(\S.*)$", helped.out, re.MULTILINE))
    assert set(named) <= set(described), set(named) - set(described)

    # The Web UI: each model call's summary counts the messages the model received.
    summaries = []
    async for event in client.get_workflow_handle(wid).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and event.user_metadata.HasField("summary"):
            summaries.append(pydantic_data_converter.payload_converter.from_payload(
                event.user_metadata.summary, str))
    model_summaries = [s for s in summaries if s.startswith("model: ")]
    received = [(req.agent, len(messages)) for req, messages, _ in model.requests]
    assert model_summaries == [f"model: {agent} ({n} message{'' if n == 1 else 's'})" for agent, n in received]
    assert "model: supervisor (2 messages)" == model_summaries[0]  # the system message and the task
    assert "tool: add" in summaries


def test_help_describes_every_command() -> None:
    named = commands(parser())
    assert {"run", "chat", "worker", "server-start"} <= set(named)
    for name, (sub, line) in named.items():
        assert sub.format_help(), name
        assert line, f"{name} has no line in --help"
