"""`durable-teams chat` off the happy path: no worker, standard input closed or ended at once,
Ctrl-C in the middle of a turn. One line and a clean exit, never a traceback or a task left
pending, and no conversation started that nobody talks to."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.approvals import ask_again
from durable_teams.examples import acme
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.messages import ModelRequest, ModelResponse

from .cli_process import ROOT, cli_env, one_line_failure, run_cli
from .conftest import running_worker
from .teams import DESK, DONE, FIRST, REFUNDS, desk_script

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

NOISE = ("Traceback", "unhandled exception", "Task was destroyed", "never retrieved", "Fatal Python error")


async def assert_not_started(client: Client, thread: str) -> None:
    with pytest.raises(RPCError) as missing:
        await client.get_workflow_handle(thread).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND


def new_thread(out: str) -> str:
    found = re.search(r"\(new thread (acme-chat-\w+)\)", out)
    assert found is not None, out
    return found.group(1)


async def test_chat_with_no_worker_says_so_at_once_and_starts_nothing(client: Client) -> None:
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    outcome = await run_cli("chat", "acme", env=cli_env(client, queue), stdin="hello\n", timeout=20)
    assert one_line_failure(outcome) == (
        f"durable-teams: no worker is polling task queue '{queue}', so no turn would be answered; "
        "nothing was sent (start one: durable-teams worker; then chat again)")
    assert not any(noise in outcome.both for noise in NOISE), outcome
    await assert_not_started(client, new_thread(outcome.out))


async def test_chat_with_standard_input_closed_is_one_line(client: Client, task_queue: str) -> None:
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", f'exec "{sys.executable}" -m durable_teams chat acme <&-', cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert (proc.returncode, out.decode(), err.decode()) == (
        1, "", "durable-teams: chat reads your turns from standard input, which is closed (run it at a "
        "terminal, or pipe the turns in)\n")
    assert [wf async for wf in client.list_workflows(f"TaskQueue = '{task_queue}'")] == []


async def test_chat_whose_input_ends_before_a_turn_leaves_nothing_behind(client: Client, task_queue: str) -> None:
    env = cli_env(client, task_queue)
    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        ended = await run_cli("chat", "acme", env=env, stdin="", timeout=30)
        quit_at_once = await run_cli("chat", "acme", env=env, stdin="\n/quit\n", timeout=30)
        closed_at_once = await run_cli("chat", "acme", env=env, stdin="/close\n", timeout=30)
    for outcome in (ended, quit_at_once, closed_at_once):
        assert (outcome.code, outcome.err) == (0, ""), outcome
        thread = new_thread(outcome.out)
        assert outcome.out.endswith(f"you> (nothing was sent; thread {thread} was not started)\n"), outcome
        await assert_not_started(client, thread)


class HeldModel(ScriptedModel):
    """The scripted model, holding each call until released: a turn stays in flight."""

    def __init__(self) -> None:
        super().__init__(acme.SCRIPT)
        self.began = asyncio.Event()
        self.release = asyncio.Event()

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        self.began.set()
        await self.release.wait()
        return await super().complete(req, messages, tools)


async def test_ctrl_c_in_the_middle_of_a_turn_exits_cleanly(client: Client, task_queue: str) -> None:
    model = HeldModel()
    async with running_worker(client, task_queue, [acme.build().compile()], model):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "durable_teams", "chat", "acme", cwd=ROOT,
            env=cli_env(client, task_queue, PYTHONFAULTHANDLER="1"),  # SIGABRT dumps every thread
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write(b"I keep failing to catch a roadrunner.\n")
        await proc.stdin.drain()
        try:
            await asyncio.wait_for(model.began.wait(), 30)  # the turn is in flight
            proc.send_signal(signal.SIGINT)
            communicating = asyncio.ensure_future(proc.communicate())
            done, _ = await asyncio.wait([communicating], timeout=30)
            if not done:  # show where it hangs
                proc.send_signal(signal.SIGABRT)
                out, err = await asyncio.wait_for(communicating, 30)
                raise AssertionError(f"chat did not exit within 30 s of Ctrl-C; its threads:\n{err.decode()}")
            out, err = communicating.result()
        finally:
            model.release.set()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 130, (out, err)
    assert not any(noise in out.decode() + err.decode() for noise in NOISE), (out, err)


def test_ctrl_c_always_ends_a_command_even_when_its_cleanup_hangs() -> None:
    """The CLI cancels the command at Ctrl-C and exits 130; a cleanup that does not end (a
    cancellation lost below us) is cut short after the grace period."""
    script = textwrap.dedent("""
        import asyncio, os, signal, sys
        from durable_teams.cli import interrupt
        interrupt.GRACE_SECONDS = 0.5

        async def stubborn():
            loop = asyncio.get_running_loop()
            loop.call_later(0.2, os.kill, os.getpid(), signal.SIGINT)
            while True:
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    print("swallowed", flush=True)  # a cleanup that never ends

        print(asyncio.run(interrupt.interruptible(stubborn())))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (130, "swallowed\n", "")


async def test_chat_asks_again_until_an_approval_is_a_plain_yes_or_no(client: Client, task_queue: str) -> None:
    """`durable-teams chat` reads approvals with the gateway's reader: a conditional or
    questioning answer is asked again, and the refund runs only on the plain yes after it."""
    REFUNDS.clear()
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)):
        outcome = await run_cli("chat", "desk", env=cli_env(client, task_queue), timeout=60,
                                stdin=f"{FIRST}\nOrder 4711\nYes if it is under $20\nok, why?\nYes.\n/quit\n")
    assert outcome.code == 0, outcome
    assert outcome.out.count(ask_again("refund")) == 2, outcome.out
    assert DONE in outcome.out and REFUNDS == ["4711"]
