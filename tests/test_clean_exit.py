"""A user's script that follows the docs and ends with a plain `asyncio.run(...)` exits 0.

Without a guard it can abort at interpreter exit ("Fatal Python error: PyGILState_Release",
exit 134): the Temporal SDK's native threads may still be releasing the GIL after handing over
the last result while the interpreter finalizes. `connect()` makes the exit wait for them
(durable_teams/client/exit_guard.py).
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_teams.client import exit_guard
from durable_teams.examples import acme
from durable_teams.worker.scripted import ScriptedModel

from .cli_process import ROOT, cli_env
from .conftest import running_worker

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

RUNS = 20


def readme_example() -> str:
    """The docs' `send_turn` example (docs/conversations.md), exactly as shown: a script of its
    own ending in `asyncio.run(main())`."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "conversations.md").read_text(), re.DOTALL)
    return next(b for b in blocks if "send_turn(client" in b and "start_conversation(" in b)


async def test_the_readme_example_exits_cleanly_every_time(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    source = readme_example()
    assert source.rstrip().endswith("asyncio.run(main())")
    # the scripts live in tmp_path: this checkout's package comes first, not an installed one
    env = cli_env(client, task_queue, PYTHONPATH=str(ROOT))
    scripts = []
    for n in range(RUNS):
        script = tmp_path / f"example_{n}.py"
        script.write_text(source.replace('"ana-1"', f'"ana-{n}-{uuid.uuid4().hex[:6]}"'))
        scripts.append(script)
    three_at_a_time = asyncio.Semaphore(3)

    async def run(script: Path) -> tuple[int, str]:
        async with three_at_a_time:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(script), cwd=ROOT, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
            assert proc.returncode is not None
            return proc.returncode, out.decode()

    async with running_worker(client, task_queue, [acme.build().compile()], ScriptedModel(acme.SCRIPT)):
        outcomes = await asyncio.gather(*(run(s) for s in scripts))
    assert [code for code, _ in outcomes] == [0] * RUNS, [o for o in outcomes if o[0]]
    assert all(out == f"[sales] {acme.SCRIPT['sales'][0].content}\n" for _, out in outcomes), outcomes[0]


BEFORE_ANY_CLIENT = exit_guard.native_threads_in_python()
"""At collection: 0 alone; 1 in a pytest-xdist worker, whose execnet reads on a raw thread."""


def test_no_native_thread_is_inside_python_when_idle() -> None:
    assert exit_guard.native_threads_in_python() == BEFORE_ANY_CLIENT
    # At exit the guard waits for none; where execnet's thread stays, it would wait out its limit.
    assert exit_guard.wait_for_native_threads(0.1) is (BEFORE_ANY_CLIENT == 0)
