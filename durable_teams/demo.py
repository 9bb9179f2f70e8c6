"""The demo: the FAANG team on the embedded Temporal server, with an in-process worker."""

from __future__ import annotations

import uuid

from durable_teams.cli import format_message
from durable_teams.runtime import build_worker, connect, ensure_search_attributes
from workflows.conversation import TeamWorkflow
from workflows.state import ConversationInput


async def run_demo(name: str = "faang") -> int:
    import worker as worker_module
    from durable_teams.examples import faang

    if name != "faang":
        print(f"Unknown demo {name!r}; available: faang")
        return 2
    address, server = worker_module.embedded_or_remote()
    client = await connect(address)
    await ensure_search_attributes(client)
    teams = worker_module.load_teams([])
    task_queue = f"demo-{uuid.uuid4().hex[:8]}"
    workflow_id = f"faang-demo-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, teams, worker_module.model_backend(), task_queue=task_queue):
        print(f"\nQuestion: {faang.QUESTION}\n")
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team_name="faang", task=faang.QUESTION),
            id=workflow_id, task_queue=task_queue)
        result = await handle.result()
        for message in await handle.query(TeamWorkflow.transcript, True):
            print(format_message(message))
    print(f"\nAnswer: {result.answer}")
    print(f"Workflow id: {workflow_id}  ({result.model_calls} model calls)")
    if server is not None:
        print(f"History in the Temporal Web UI: {server.ui_url}/namespaces/default/workflows/{workflow_id}")
        print("The embedded server keeps running for the UI; stop it with: durable-teams server-stop")
    return 0
