"""`durable-teams chat <team> [--thread ID]`: an interactive conversation at the terminal.

Each line you type is a turn; the reply prints with the agent that gave it. Questions from
`ask_human` and approvals print as they come and take the next line as the answer. The thread
is the workflow id: chat on the same thread later (or from another machine) and the team
remembers. `/quit` leaves the conversation running; `/close` ends it.

A new thread's conversation starts with its first turn, so a session that sends nothing (its
input ends, or `/quit` at once) leaves nothing behind. With no worker polling the thread's task
queue, chat says so in one line and ends before anything is sent: no turn would be answered.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from dataclasses import dataclass

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.client.connection import TASK_QUEUE
from durable_teams.client.refusals import (
    ConversationEnded,
    ReplyRejected,
    TurnAbandoned,
    TurnRejected,
)
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.server_state import (
    questions_of,
    why_it_failed,
    worker_notes,
    workers_on,
    workers_soon,
)
from durable_teams.client.start import start_conversation
from durable_teams.client.thread_ids import team_part
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, Question, TurnReply


async def read_line(prompt: str) -> str | None:
    """One line from standard input, or None at its end."""
    print(prompt, end="", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    return line.rstrip("\n") if line else None


@dataclass
class Thread:
    """The conversation a chat session talks to: `started` is False for a new thread until its
    first turn starts it."""

    client: Client
    team: str
    id: str
    task_queue: str
    started: bool
    tenant: str | None = None
    user: str | None = None
    """Its tenant and end user, for a new thread (docs/architecture.md, "Tenants and users")."""

    async def start(self) -> None:
        """Start the new thread's conversation (before its first turn)."""
        if self.started:
            return
        try:
            await start_conversation(self.client, self.team, ConversationInput(
                team_name=self.team, single_turn=False), tenant=self.tenant, user=self.user,
                id=self.id, task_queue=self.task_queue)
        except WorkflowAlreadyStartedError:  # started meanwhile, elsewhere: talk to that one
            pass
        self.started = True

    def left(self) -> str:
        if not self.started:
            return f"(nothing was sent; thread {self.id} was not started)"
        return (f"(left thread {self.id} running; continue with: durable-teams chat {self.team} "
                f"--thread {self.id})")


async def open_thread(client: Client, team: str, thread: str | None, task_queue: str = TASK_QUEUE) -> Thread:
    """A running conversation with this id (on its own task queue), or a new thread on
    `task_queue` (started by its first turn)."""
    thread = thread or f"{team_part(team)}-chat-{uuid.uuid4().hex[:8]}"
    try:
        described = await client.get_workflow_handle(thread).describe()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"(new thread {thread})")
        return Thread(client, team, thread, task_queue, started=False)
    if described.status == WorkflowExecutionStatus.RUNNING:
        print(f"(continuing thread {thread})")
        return Thread(client, team, thread, described.task_queue, started=True)
    # A new conversation under a closed thread's id would silently start with no memory.
    state = described.status.name if described.status else "closed"
    raise SystemExit(f"thread {thread} has ended ({state}); its conversation cannot go on. "
                     f"Start a new one: durable-teams chat {team}")


async def require_a_worker(thread: Thread) -> None:
    """Before a turn: no worker polling the thread's queue ends the session in one line, since
    nothing would answer the turn."""
    if not await workers_soon(thread.client, thread.task_queue):
        raise SystemExit(f"durable-teams: no worker is polling task queue {thread.task_queue!r}, so no "
                         "turn would be answered; nothing was sent (start one: durable-teams worker; "
                         "then chat again" + (f" with --thread {thread.id})" if thread.started else ")"))


async def say_who_answers(thread: Thread) -> None:
    """Before the first turn: no worker (one line, and chat ends), or a scripted one."""
    await require_a_worker(thread)
    for note in worker_notes(await workers_on(thread.client, thread.task_queue), thread.task_queue):
        print(f"({note})")


async def open_questions(client: Client, thread: str) -> list[Question]:
    """The conversation's pending questions, from its memo (no worker needed), else a bounded
    query; none when that query cannot be answered now (the turn's own outcome tells)."""
    try:
        return await questions_of(client.get_workflow_handle(thread))
    except (WorkflowQueryFailedError, RPCError) as err:
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # Ctrl-C came during the call: never swallow
            raise asyncio.CancelledError from None  # it as "no questions" and poll on
        if isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND:
            raise
        return []


async def answer_questions(client: Client, thread: str, turn: asyncio.Future[TurnReply]) -> bool:
    """While a turn runs, show each new question and send the next line as its answer.
    Returns False when standard input ended."""
    seen: set[str] = set()
    while not turn.done():
        questions = await open_questions(client, thread)
        fresh = [q for q in questions if q.question_id not in seen]
        if not fresh:
            await asyncio.wait([turn], timeout=0.2)  # poll the query while the turn runs
            continue
        q = fresh[0]
        seen.add(q.question_id)
        if q.kind == "approval":
            line = await read_line(f"? [{q.agent}] {'resume at a ' if q.breakpoint else 'approve '}{q.step}? [y/n] ")
            while line is not None and approval_of(line) is None:  # unclear: ask again
                line = await read_line(f"{ask_again(q.tool or q.agent)} [y/n] ")
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


async def chat(client: Client, team: str, thread_id: str | None, task_queue: str = TASK_QUEUE,
               tenant: str | None = None, user: str | None = None) -> int:
    if sys.stdin is None or sys.stdin.closed:
        raise SystemExit("durable-teams: chat reads your turns from standard input, which is "
                         "closed (run it at a terminal, or pipe the turns in)")
    thread = await open_thread(client, team, thread_id, task_queue)
    thread.tenant, thread.user = tenant, user  # a new thread's; a running one keeps its own
    await say_who_answers(thread)
    turns = 0
    while True:
        line = await read_line("you> ")
        if line is None or line.strip() == "/quit":
            print(thread.left())
            return 0
        if line.strip() == "/close":
            if thread.started:
                await client.get_workflow_handle(thread.id).signal(TeamWorkflow.close)
            print("(conversation closed)" if thread.started else thread.left())
            return 0
        if not line.strip():
            continue
        if turns:  # the first was checked as the session began
            await require_a_worker(thread)
        await thread.start()
        turns += 1
        turn = asyncio.ensure_future(cancellable_turn(client, thread.id, line))
        try:
            if not await answer_questions(client, thread.id, turn):
                print(thread.left())
                return 0
            reply = await turn
        except WorkflowUpdateFailedError as rejected:  # an oversized turn, or the thread is closing
            print(f"(not sent: {getattr(rejected.cause, 'message', rejected.cause)})")
            continue
        except TurnRejected as rejected:  # the same, where the turn went as a signal (updates off)
            print(f"(not sent: {rejected})")
            continue
        except TurnAbandoned as abandoned:  # someone rewound the thread: it goes on without this turn
            print(f"({abandoned})")
            continue
        except ConversationEnded as ended:
            print(f"{ended}{await why_it_failed(client, thread.id)}")
            return 1
        except RPCError as err:  # e.g. the conversation ended before this turn was sent
            print(f"could not send to {thread.id}: {err.message}{await why_it_failed(client, thread.id)}")
            return 1
        finally:
            await settle(turn)
        marker = "" if reply.status == "completed" else f" ({reply.status})"
        print(f"[{reply.agent}]{marker} {reply.text}")


async def cancellable_turn(client: Client, thread: str, text: str) -> TurnReply:
    """`send_turn`, ending as cancelled when cancelled (the SDK turns the cancellation of an
    update into an error, which asyncio would report at shutdown as never retrieved)."""
    try:
        return await send_turn(client, thread, text)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError from None
        raise


async def settle(task: asyncio.Future[TurnReply]) -> None:
    """Cancel `task` if it still runs and wait until it ends, its outcome retrieved: a session
    that ends leaves no task pending and no error unreported."""
    if not task.done():
        task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()
