"""Record the workflow histories that test_replay.py replays: python -m tests.record_histories

Re-record only on purpose: a committed history is the proof that conversations started with
older code still replay under the new code.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.examples import faang
from durable_teams.scripted import ScriptedModel
from workflows.conversation import TeamWorkflow
from workflows.state import ConversationInput

from .conftest import binary, running_worker

HERE = Path(__file__).parent / "histories"


async def main() -> None:
    async with await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=binary("temporal")
    ) as env:
        compiled = faang.build().compile()
        async with running_worker(env.client, "record", [compiled], ScriptedModel(faang.SCRIPT)):
            handle = await env.client.start_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION,
                                                    set_search_attributes=False),
                id="faang-recorded", task_queue="record")
            await handle.result()
            history = await handle.fetch_history()
    (HERE / "faang.json").write_text(history.to_json())
    print(f"wrote {HERE / 'faang.json'}")


if __name__ == "__main__":
    asyncio.run(main())
