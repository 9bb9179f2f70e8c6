"""Record the workflow histories that test_replay.py replays:

    python -m tests.record_histories faang_teams      # one history, by name
    python -m tests.record_histories                  # all of them

Re-record only on purpose: a committed history is the proof that conversations started with
older code still replay under the new code.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import ModuleType

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.examples import faang, faang_teams
from durable_teams.scripted import ScriptedModel
from workflows.conversation import TeamWorkflow
from workflows.state import ConversationInput

from .conftest import binary, running_worker

HERE = Path(__file__).parent / "histories"
EXAMPLES: dict[str, ModuleType] = {"faang": faang, "faang_teams": faang_teams}
"""History name -> example module (`build()`, `SCRIPT`, `QUESTION`). `faang_teams` is the
parent of a two-level team: its history holds the child workflow commands."""


async def main(names: list[str]) -> None:
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal")
    ) as env:
        for name in names:
            example = EXAMPLES[name]
            compiled = example.build().compile()
            async with running_worker(env.client, "record", [compiled], ScriptedModel(example.SCRIPT)):
                handle = await env.client.start_workflow(
                    TeamWorkflow.run, ConversationInput(team=compiled.spec, task=example.QUESTION,
                                                        set_search_attributes=False),
                    id=name, task_queue="record")  # the id test_replay replays it under
                await handle.result()
                history = await handle.fetch_history()
            (HERE / f"{name}.json").write_text(history.to_json())
            print(f"wrote {HERE / f'{name}.json'}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(EXAMPLES)))
