"""Benchmark: replaying recorded conversations against a scripted candidate (docs/replay.md).

    python -m bench.replay [--conversations 100] [--concurrency 20]

Records N conversations first (half FAANG, half support, each support one with a question and
an approved refund) on a worker with the example teams' scripts, on a local dev server in
memory; then replays them all against `durable_teams.examples.replay_candidates` (FAANG routed
to the math expert first, support's refund without approval), concurrently, on a worker and a
task queue of the replay's own, and prints the time the replay took (the goal: 100 in under
2 minutes) with the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.examples import faang, replay_candidates, support
from durable_teams.replay.candidate import Candidate
from durable_teams.replay.comparison import totals
from durable_teams.replay.question_book import AnswerRule, QuestionBook
from durable_teams.replay.records import Record
from durable_teams.replay.replay_runner import ConversationDriver, ReplaySettings, replay
from durable_teams.replay.replay_sources import record_of_workflow
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.temporal_cli import find_temporal_binary
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

PEOPLE = [AnswerRule(question="order number", answer="Order 4711"),
          AnswerRule(tool="execute_refund", approve=True)]
"""What the people of the recorded support conversations answered."""


async def record_examples(client: Client, count: int, task_queue: str | None = None) -> list[Record]:
    """`count` conversations (FAANG and support, alternating) run on the example teams with
    their scripts, each read back from its history: the record a replay starts from."""
    queue = task_queue or f"record-{uuid.uuid4().hex[:8]}"
    teams = [faang.build().compile(), support.build().compile()]
    backend = ScriptedModel(teams={"faang": faang.SCRIPT, "support": support.SCRIPT})
    nobody = Record("", "", None, None, True)

    async def one(n: int) -> str:
        module = faang if n % 2 == 0 else support
        workflow_id = f"{module.__name__.rsplit('.', 1)[-1]}-{queue}-{n}"
        await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=teams[n % 2].spec, task=module.QUESTION,
                                                set_search_attributes=False),
            id=workflow_id, task_queue=queue)
        people = ConversationDriver(client, workflow_id, QuestionBook(nobody, PEOPLE))
        people.turn = 1
        await asyncio.gather(people.follow(), client.get_workflow_handle(workflow_id).result())
        return workflow_id

    async with build_worker(client, teams, backend, task_queue=queue):
        ids = await asyncio.gather(*(one(n) for n in range(count)))
    return [await record_of_workflow(client, workflow_id) for workflow_id in ids]


def candidate() -> Candidate:
    teams = [team.compile() for team in replay_candidates.TEAMS]
    return Candidate(ScriptedModel(teams=replay_candidates.SCRIPT), teams,
                     description="durable_teams.examples.replay_candidates")


async def main(count: int, concurrency: int) -> None:
    async with await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=find_temporal_binary(),
            dev_server_log_level="error") as env:
        began = time.perf_counter()
        records = await record_examples(env.client, count)
        recorded = time.perf_counter() - began
        began = time.perf_counter()
        diffs = await replay(env.client, records, candidate(), ReplaySettings(concurrency=concurrency))
        took = time.perf_counter() - began
    total = totals(diffs)
    load = os.getloadavg()
    print(f"recorded {count} conversations in {recorded:.1f} s")
    print(f"replayed {count} conversations in {took:.1f} s ({concurrency} at once; "
          f"load average {load[0]:.1f} / {load[1]:.1f} on {os.cpu_count()} cores)")
    print(f"routed differently: {total.routing_changed}, lost approvals: {total.lost_approvals}, "
          f"stopped: {total.stopped}, failed: {total.failed}, stand-ins: {total.stand_ins}")
    print(f"goal (100 in under 120 s): {'met' if took < 120 * count / 100 else 'NOT met'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.conversations, args.concurrency))
