"""The demo: the FAANG team on the embedded Temporal server, with an in-process worker."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client, WorkflowHandle

from durable_teams.activities.model import OpenAIBackend
from durable_teams.cli.console import format_message
from durable_teams.client.connection import connect
from durable_teams.client.start import start_conversation
from durable_teams.teams.builders import CompiledTeam
from durable_teams.worker.build import build_worker, ensure_search_attributes
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, Question


@asynccontextmanager
async def demo_worker(client: Client, teams: list[CompiledTeam], task_queue: str) -> AsyncIterator[None]:
    """An in-process worker on the configured model; its HTTP connections closed at the end."""
    from durable_teams.worker import run as worker_module

    backend = worker_module.model_backend()
    try:
        async with build_worker(client, teams, backend, task_queue=task_queue):
            yield
    finally:
        if isinstance(backend, OpenAIBackend):
            await backend.aclose()


async def run_demo(name: str = "faang") -> int:
    from durable_teams.examples import faang
    from durable_teams.worker import run as worker_module

    if name == "support":
        return await run_support_demo()
    if name != "faang":
        print(f"Unknown demo {name!r}; available: faang, support")
        return 2
    address, server = worker_module.embedded_or_remote()
    client = await connect(address)
    await ensure_search_attributes(client)
    teams = worker_module.load_teams([])
    task_queue = f"demo-{uuid.uuid4().hex[:8]}"
    workflow_id = f"faang-demo-{uuid.uuid4().hex[:8]}"
    async with demo_worker(client, teams, task_queue):
        print(f"\nQuestion: {faang.QUESTION}\n")
        handle = await start_conversation(
            client, "faang", ConversationInput(team_name="faang", task=faang.QUESTION),
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


async def run_support_demo() -> int:
    """The support team: the supervisor asks the customer a question, a refund needs approval.
    Answer at this terminal, or from another with `durable-teams answer` / `approve`."""
    from durable_teams.examples import support
    from durable_teams.worker import run as worker_module

    address, server = worker_module.embedded_or_remote()
    client = await connect(address)
    await ensure_search_attributes(client)
    task_queue = f"demo-{uuid.uuid4().hex[:8]}"
    workflow_id = f"support-demo-{uuid.uuid4().hex[:8]}"
    async with demo_worker(client, worker_module.load_teams([]), task_queue):
        print(f"\nCustomer: {support.QUESTION}\n")
        handle = await start_conversation(
            client, "support", ConversationInput(team_name="support", task=support.QUESTION),
            id=workflow_id, task_queue=task_queue)
        result_task = asyncio.ensure_future(handle.result())
        await answer_until_done(client, handle, result_task)
        result = await result_task
        for message in await handle.query(TeamWorkflow.transcript, True):
            print(format_message(message))
    print(f"\nAnswer: {result.answer}\nWorkflow id: {workflow_id}")
    if server is not None:
        print(f"History in the Temporal Web UI: {server.ui_url}/namespaces/default/workflows/{workflow_id}")
    return 0


async def answer_until_done(client: Client, handle: WorkflowHandle[Any, Any], done: asyncio.Future[Any]) -> None:
    """Each question the conversation asks, shown with the commands that answer it from another
    terminal and answered at this one, until `done` (its result) is; a question answered
    elsewhere meanwhile is said and asked again if it still waits."""
    from durable_teams.cli.console import format_question
    from durable_teams.client.refusals import ReplyRejected
    from durable_teams.client.send import send_reply

    seen: set[str] = set()
    stdin_open = True
    while not done.done():
        pending = [q for q in await handle.query(TeamWorkflow.pending_questions) if q.question_id not in seen]
        if not pending:
            await asyncio.wait([done], timeout=0.2)
            continue
        question = pending[0]
        seen.add(question.question_id)
        print(format_question(handle.id, question))
        if not stdin_open:
            continue
        reply = await typed_answer(question)
        if reply is None:
            stdin_open = False
            print("(no terminal input: answer from another terminal with the command above)")
            continue
        try:
            await send_reply(client, handle.id, question.question_id, **reply)
        except ReplyRejected as rejected:  # answered elsewhere meanwhile, or empty
            print(rejected)
            seen.discard(question.question_id)


async def typed_answer(question: Question) -> dict[str, Any] | None:
    """The answer a person types at this terminal, as `send_reply` takes it: an approval read
    strictly (a yes or a no, asked again while unclear); None when the terminal has no input."""
    from durable_teams.client.approvals import approval_of, ask_again

    prompt = "Approve? [y/n] " if question.kind == "approval" else "Your answer: "
    try:
        text = await asyncio.to_thread(input, prompt)
        while question.kind == "approval" and approval_of(text) is None:  # unclear: ask again
            text = await asyncio.to_thread(input, f"{ask_again(question.tool or question.agent)} [y/n] ")
    except EOFError:
        return None
    return {"approved": bool(approval_of(text))} if question.kind == "approval" else {"text": text}
