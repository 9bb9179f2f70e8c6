"""`durable-teams chat <team> [--thread ID]`: an interactive conversation at the terminal.

Each line you type is a turn; the reply prints with the agent that gave it. Questions from
`ask_human` and approvals print as they come and take the next line as the answer. The thread
is the workflow id: chat on the same thread later (or from another machine) and the team
remembers. `/quit` leaves the conversation running; `/close` ends it.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.client.connection import TASK_QUEUE
from durable_teams.client.send import ConversationEnded, ReplyRejected, send_reply, send_turn
from durable_teams.client.server_state import why_it_failed, worker_notes, workers_on
from durable_teams.client.start import start_conversation
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, Question, TurnReply


async def read_line(prompt: str) -> str | None:
    """One line from standard input, or None at its end."""
    print(prompt, end="", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    return line.rstrip("\n") if line else None


async def open_thread(client: Client, team: str, thread: str | None) -> str:
    """Attach to a running conversation with this id, or start one."""
    thread = thread or f"{team}-chat-{uuid.uuid4().hex[:8]}"
    try:
        described = await client.get_workflow_handle(thread).describe()
        if described.status == WorkflowExecutionStatus.RUNNING:
            print(f"(continuing thread {thread})")
            return thread
        # A new conversation under a closed thread's id would silently start with no memory.
        state = described.status.name if described.status else "closed"
        raise SystemExit(f"thread {thread} has ended ({state}); its conversation cannot go on. "
                         f"Start a new one: durable-teams chat {team}")
    except RPCError:
        pass
    await start_conversation(client, team, ConversationInput(team_name=team, single_turn=False),
                             id=thread, task_queue=TASK_QUEUE)
    print(f"(new thread {thread})")
    return thread


async def say_who_answers(client: Client) -> None:
    """Before the first turn: no worker (the turn will wait), or a scripted one."""
    for note in worker_notes(await workers_on(client, TASK_QUEUE), TASK_QUEUE):
        print(f"({note})")


async def answer_questions(client: Client, thread: str, turn: asyncio.Future[TurnReply]) -> bool:
    """While a turn runs, show each new question and send the next line as its answer.
    Returns False when standard input ended."""
    handle = client.get_workflow_handle(thread)
    seen: set[str] = set()
    while not turn.done():
        questions: list[Question] = await handle.query(TeamWorkflow.pending_questions)
        fresh = [q for q in questions if q.question_id not in seen]
        if not fresh:
            await asyncio.wait([turn], timeout=0.2)  # poll the query while the turn runs
            continue
        q = fresh[0]
        seen.add(q.question_id)
        if q.kind == "approval":
            line = await read_line(f"? [{q.agent}] approve {q.tool}({q.arguments})? [y/n] ")
            while line is not None and approval_of(line) is None:  # unclear: ask again
                line = await read_line(f"{ask_again(q.tool or 'the tool')} [y/n] ")
            reply: dict[str, object] = {"approved": bool(line is not None and approval_of(line))}
        else:
            hint = f" ({' | '.join(q.suggestions)})" if q.suggestions else ""
            line = await read_line(f"? [{q.agent}] {q.text}{hint}\n> ")
            reply = {"text": line or ""}
        if line is None:
            return False
        try:
            await send_reply(client, thread, q.question_id, **reply)
        except ReplyRejected as rejected:  # answered elsewhere, or empty
            print(rejected)
            seen.discard(q.question_id)
    return True


async def chat(client: Client, team: str, thread: str | None) -> int:
    thread = await open_thread(client, team, thread)
    await say_who_answers(client)
    while True:
        line = await read_line("you> ")
        if line is None or line.strip() == "/quit":
            print(f"(left thread {thread} running; continue with: durable-teams chat {team} --thread {thread})")
            return 0
        if line.strip() == "/close":
            await client.get_workflow_handle(thread).signal(TeamWorkflow.close)
            print("(conversation closed)")
            return 0
        if not line.strip():
            continue
        turn = asyncio.ensure_future(send_turn(client, thread, line))
        if not await answer_questions(client, thread, turn):
            turn.cancel()
            return 0
        try:
            reply = await turn
        except WorkflowUpdateFailedError as rejected:  # an oversized turn, or the thread is closing
            print(f"(not sent: {getattr(rejected.cause, 'message', rejected.cause)})")
            continue
        except ConversationEnded as ended:
            print(f"{ended}{await why_it_failed(client, thread)}")
            return 1
        except RPCError as err:  # e.g. the conversation ended before this turn was sent
            print(f"could not send to {thread}: {err.message}{await why_it_failed(client, thread)}")
            return 1
        marker = "" if reply.status == "completed" else f" ({reply.status})"
        print(f"[{reply.agent}]{marker} {reply.text}")
