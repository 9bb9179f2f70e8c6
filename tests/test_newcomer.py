"""The first hour, as a newcomer spends it: a fresh virtual environment with the project
installed from a clone, the README's team saved as `myteams.py` in a folder of its own with the
script from docs/scripted-models.md, and, from that folder, the README's command
`durable-teams worker --team myteams:TEAMS --examples` (a console script: the folder is not on
its path by itself). Then, with no model key: the team answers, an example team with a tool of
the same name (`add`) answers its own question beside it, a question is answered and an
approval given with the CLI, and a denied refund is reported as not made."""

from __future__ import annotations

import asyncio
import os
import re
import site
import subprocess
import uuid
import venv
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.workflows.state import ConversationResult

from .clones import tracked_copy
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


def fenced(page: Path, lang: str, containing: str) -> str:
    """The first ```lang block of `page` that contains `containing`, exactly as shown."""
    found = re.findall(rf"```{lang}\n(.*?)```", page.read_text("utf-8"), re.DOTALL)
    return next(block for block in found if containing in block)


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with a clone of this checkout installed (`pip install -e`,
    offline: the dependencies come from this environment's site-packages); its bin folder."""
    where = tmp_path_factory.mktemp("newcomer")
    clone = tracked_copy(where / "clone")
    venv.create(where / "env", with_pip=True)
    python = where / "env" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "zz_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "-e", str(clone)], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(site.getsitepackages())})  # setuptools to build
    installed = subprocess.run([str(python), "-c", "import durable_teams; print(durable_teams.__file__)"],
                               cwd=where, capture_output=True, text=True, check=True).stdout
    assert installed.startswith(str(clone)), installed  # the clone's code, not this checkout's
    return where / "env" / "bin"


@pytest.fixture
def team_folder(tmp_path: Path) -> Path:
    """The README's team and the docs' script, in a folder of their own."""
    (tmp_path / "myteams.py").write_text(fenced(ROOT / "README.md", "python", "TEAMS = "))
    (tmp_path / "myscript.json").write_text(fenced(ROOT / "docs" / "scripted-models.md", "json", '"my-team"'))
    return tmp_path


class Newcomer:
    def __init__(self, bin_dir: Path, folder: Path, env: dict[str, str]) -> None:
        self.bin, self.folder, self.env = bin_dir, folder, env

    async def cli(self, *args: str) -> str:
        """`durable-teams ARGS` from the team's folder; its stdout, after checking it succeeded."""
        proc = await asyncio.create_subprocess_exec(
            str(self.bin / "durable-teams"), *args, cwd=self.folder, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert proc.returncode == 0, f"durable-teams {' '.join(args)}: {out.decode()}{err.decode()}"
        assert "Traceback" not in err.decode()
        return out.decode()

    @asynccontextmanager
    async def worker(self, *args: str) -> AsyncIterator[list[str]]:
        """`durable-teams worker ARGS` from the team's folder, until it says it polls; its
        output lines so far (still collected while it runs)."""
        proc = await asyncio.create_subprocess_exec(
            str(self.bin / "durable-teams"), "worker", *args, cwd=self.folder, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        assert proc.stdout is not None
        lines: list[str] = []
        polling = asyncio.Event()

        async def read() -> None:
            assert proc.stdout is not None
            async for raw in proc.stdout:
                lines.append(raw.decode().rstrip())
                if lines[-1].startswith("Worker: polling"):
                    polling.set()

        reader = asyncio.ensure_future(read())
        try:
            await asyncio.wait({reader, asyncio.ensure_future(polling.wait())}, timeout=120,
                               return_when=asyncio.FIRST_COMPLETED)
            assert polling.is_set(), "\n".join(lines)
            yield lines
        finally:
            if proc.returncode is None:
                proc.terminate()  # SIGTERM: a graceful stop
            await asyncio.wait_for(proc.wait(), 60)
            await asyncio.wait_for(reader, 10)


async def test_a_newcomers_own_team_runs_beside_the_examples(
        fresh_env: Path, team_folder: Path, client: Client, task_queue: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "PYTHON", "TEMPORAL_", "VIRTUAL_ENV"))}
    env.update(TEMPORAL_ADDRESS=client.service_client.config.target_host, PATH=f"{fresh_env}:{env['PATH']}",
               PYTHONUNBUFFERED="1")  # the worker's lines as a terminal shows them
    me = Newcomer(fresh_env, team_folder, env)
    graph = await me.cli("graph", "my-team", "--team", "myteams:TEAMS")
    assert graph.startswith("flowchart") and "math_expert" in graph and "refunds" in graph

    async with me.worker("--team", "myteams:TEAMS", "--script", "myscript.json", "--examples",
                         "--task-queue", task_queue) as log:
        assert f"Worker: polling task queue {task_queue!r}; teams: faang, support, acme, faang-teams, my-team" in log
        mine = await me.cli("run", "my-team", "what is 2+2?", "--task-queue", task_queue)
        assert "[supervisor] 2 + 2 = 4." in mine.splitlines(), mine
        theirs = await me.cli("run", "faang", faang.QUESTION, "--task-queue", task_queue)
        assert f"[supervisor] {faang.ANSWER}" in theirs.splitlines(), theirs  # the example's own add

        for decision, reply in (("approve", "Done: your item is refunded."),
                                ("deny", "Sorry: the refund was not approved, so nothing was refunded.")):
            wid = f"refund-{uuid.uuid4().hex[:6]}"
            assert (await me.cli("run", "my-team", "I want a refund", "--no-wait", "--id", wid,
                                 "--task-queue", task_queue)).strip() == wid
            handle = client.get_workflow_handle(wid, result_type=ConversationResult)
            question = await pending_question(handle)
            assert (question.kind, question.text) == ("question", "Which item should be refunded?")
            assert "Which item should be refunded?" in await me.cli("pending")
            await me.cli("answer", wid, "the blue kettle")
            approval = await pending_question(handle)
            assert approval.kind == "approval" and approval.tool == "execute_refund"
            await me.cli(decision, wid, *(["--reason", "not today"] if decision == "deny" else []))
            result = await handle.result()
            assert result.answer == reply
            assert f"last reply [supervisor, completed]: {reply}" in await me.cli("status", wid)
    assert not any("Traceback" in line for line in log), "\n".join(log)
