"""Running recorded conversations against a candidate, in isolation, concurrently.

The candidate's conversations run on a worker in this process, on a task queue of its own
(`replay-<random>`), with a memory store of its own (in memory) and no live-token hub but this
process's: nothing reaches production threads, memories or caches. The CLI also gives them a
Temporal server of their own (`private_server`). Each conversation gets the record's user
turns in order, each one after the previous reply; the record's answers answer the
candidate's questions (question_book.py); the tool calls are served as tool_book.py decides.
Its history is then read like the record's (history_records.py) and the two are compared.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from durable_teams.client.refusals import ConversationEnded, ReplyRejected
from durable_teams.client.reply_watch import ConversationStopped, wait_for_reply
from durable_teams.client.send import send_reply, send_turn
from durable_teams.client.server_state import root_cause
from durable_teams.live.hub import LocalHub
from durable_teams.replay.candidate import Candidate, CandidateError
from durable_teams.replay.comparison import ConversationDiff, compare
from durable_teams.replay.history_records import PENDING_MEMO, first
from durable_teams.replay.question_book import AnswerRule, QuestionBook
from durable_teams.replay.records import Record
from durable_teams.replay.replay_sources import record_of_workflow
from durable_teams.replay.replay_tools import ReplayTools
from durable_teams.replay.tool_book import ToolBook
from durable_teams.worker.build import build_worker
from durable_teams.worker.temporal_cli import find_temporal_binary
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import TeamSpec
from durable_teams.workflows.state import ConversationInput
from durable_teams.workflows.usage import ModelPrice

EARLIER_TURN = "(before this history)"
FOLLOWER_GRACE = 10.0
"""Seconds the question follower gets to see a closed conversation's last events before it is
cancelled (cancelling a call in flight is logged by the server as an error)."""


@dataclass
class ReplaySettings:
    allow_live_tools: bool = False
    """Run a call the record does not have when its tool is declared idempotent."""
    answers: list[AnswerRule] = field(default_factory=list)
    prices: dict[str, ModelPrice] = field(default_factory=dict)
    concurrency: int = 20
    """Conversations replayed at once."""
    timeout_seconds: float = 600.0
    """The longest one conversation's replay may take before it is stopped and reported."""


@asynccontextmanager
async def private_server() -> AsyncIterator[Client]:
    """A Temporal dev server of the replay's own, in memory, gone when the replay ends. Its
    banner goes to stderr: stdout is the report's."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)  # the server process inherits the descriptor it starts with
    try:
        env = await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=find_temporal_binary(),
            dev_server_log_level="error")
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    async with env:
        yield env.client


def asked(event: HistoryEvent) -> list[dict[str, Any]]:
    """The questions pending after `event`, if it is the workflow's update of them (its memo)."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
        return []
    memo = event.workflow_properties_modified_event_attributes.upserted_memo.fields
    return list(first([memo[PENDING_MEMO]]) or []) if PENDING_MEMO in memo else []


class ConversationDriver:
    """Answers one replayed conversation's questions as they are asked (from the record, else
    the answers file), or stops the conversation at one neither answers."""

    def __init__(self, client: Client, workflow_id: str, questions: QuestionBook) -> None:
        self.client, self.workflow_id, self.questions = client, workflow_id, questions
        self.turn = 0
        self.answered: dict[tuple[str, str], str] = {}
        """(workflow id, question id) -> who answered it ("record", "answers file")."""
        self.stopped: str | None = None

    async def follow(self, workflow_id: str | None = None) -> None:
        """Long-polls the history of the conversation (or of its child workflow `workflow_id`:
        a nested team asks its questions there) for questions asked, no query while nothing
        happens; each child it starts is followed too."""
        workflow_id = workflow_id or self.workflow_id
        handle = self.client.get_workflow_handle(workflow_id)
        seen: set[str] = set()
        children: list[asyncio.Future[None]] = []
        try:
            while True:
                described = await handle.describe()
                run = self.client.get_workflow_handle(workflow_id, run_id=described.run_id)
                async for event in run.fetch_history_events(wait_new_event=True):
                    if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
                        child = event.child_workflow_execution_started_event_attributes.workflow_execution
                        children.append(asyncio.ensure_future(self.follow(child.workflow_id)))
                    for question in asked(event):
                        if question["question_id"] not in seen:
                            seen.add(question["question_id"])
                            await self.answer(workflow_id, question)
                if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                    return
        finally:
            for task in children:
                task.cancel()
            await asyncio.gather(*children, return_exceptions=True)

    async def answer(self, workflow_id: str, question: dict[str, Any]) -> None:
        qid = question["question_id"]
        found = self.questions.answer_for(question, self.turn)
        if found is None:
            return await self.stop(f"stopped at {question.get('kind', 'question')} {qid} from "
                                   f"{question.get('agent')}: {question.get('text')!r}: the record has no answer "
                                   "to it, and no --answers rule matches")
        self.answered[(workflow_id, qid)] = found.by
        approval = question.get("kind") == "approval"
        try:
            await send_reply(self.client, workflow_id, qid, text=found.text or ("" if approval else "(no answer)"),
                             approved=found.approved if approval else None)
        except ReplyRejected as err:  # never left waiting for an answer that was refused
            await self.stop(f"stopped at {question.get('kind', 'question')} {qid}: its answer was refused: {err}")

    async def stop(self, why: str) -> None:
        self.stopped = why
        try:
            await self.client.get_workflow_handle(self.workflow_id).terminate(reason=why)
        except RPCError:  # it ended meanwhile: stopped all the same
            pass

    async def drive(self, record: Record) -> None:
        """The record's turns, each after the previous one's reply, then the conversation closed."""
        handle = self.client.get_workflow_handle(self.workflow_id)
        if record.task:
            self.turn = 1
            if record.single_turn:
                await handle.result()
                return
            await wait_for_reply(self.client, self.workflow_id, 1, None, None)
        for turn in record.turns[1 if record.task else 0:]:
            if turn.text == EARLIER_TURN:
                continue
            self.turn += 1
            await send_turn(self.client, self.workflow_id, turn.text)
        await handle.signal(TeamWorkflow.close)
        await handle.result()


async def replay_one(client: Client, task_queue: str, workflow_id: str, record: Record, candidate: Candidate,
                     settings: ReplaySettings, books: dict[str, ToolBook]) -> ConversationDiff:
    try:
        spec = candidate.spec_for(record)
    except CandidateError as err:
        return _not_run(record, str(err), settings)
    book = books[workflow_id] = ToolBook(record, settings.allow_live_tools)
    driver = ConversationDriver(client, workflow_id, QuestionBook(record, settings.answers))
    error = await _run(client, task_queue, workflow_id, record, spec, driver, settings)
    after = await record_of_workflow(client, workflow_id)
    book.mark(after)
    by_question = {qid: by for (_, qid), by in driver.answered.items()}
    for question in after.asked:
        question.answered_by = by_question.get(question.question_id, "")
    if driver.stopped:
        after.status = "stopped"
        after.notes.append(driver.stopped)
    diff = compare(record, after, settings.prices, book.real_runs())
    failed_calls = [n for n in after.notes if n.startswith("model call of")]
    diff.error = failed_calls[0] if failed_calls else error  # the candidate's own failure says most
    return diff


async def _run(client: Client, task_queue: str, workflow_id: str, record: Record, spec: TeamSpec,
               driver: ConversationDriver, settings: ReplaySettings) -> str | None:
    """Run the conversation; what went wrong (None: nothing, or stopped at a question)."""
    start = ConversationInput(team=spec, task=record.task, single_turn=record.single_turn,
                              context=record.context, set_search_attributes=False)
    handle = await client.start_workflow(TeamWorkflow.run, start, id=workflow_id, task_queue=task_queue)
    follower = asyncio.ensure_future(driver.follow())
    try:
        await asyncio.wait_for(driver.drive(record), settings.timeout_seconds)
        return None
    except (WorkflowFailureError, ConversationEnded, ConversationStopped, ReplyRejected, RPCError) as err:
        if driver.stopped:
            return None
        return f"failed: {root_cause(err)}" if isinstance(err, WorkflowFailureError) else f"{type(err).__name__}: {err}"
    except TimeoutError:
        await handle.terminate(reason="the replay's time ran out")
        return f"did not finish within {settings.timeout_seconds:g} s"
    finally:  # the conversation has closed: the follower's long poll ends with it
        done, _ = await asyncio.wait({follower}, timeout=FOLLOWER_GRACE)
        if not done:
            follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)


def _not_run(record: Record, why: str, settings: ReplaySettings) -> ConversationDiff:
    after = Record(record.workflow_id, record.team, None, record.task, record.single_turn, status="not run")
    diff = compare(record, after, settings.prices)
    diff.error = why
    return diff


async def replay(client: Client, records: Sequence[Record], candidate: Candidate,
                 settings: ReplaySettings | None = None) -> list[ConversationDiff]:
    """Replay `records` against `candidate` on `client`'s server, on a task queue of its own,
    at most `settings.concurrency` at once; the diffs in the order of `records`."""
    settings = settings or ReplaySettings()
    tag = uuid.uuid4().hex[:8]
    task_queue = f"replay-{tag}"
    books: dict[str, ToolBook] = {}
    tools = ReplayTools(candidate.teams, books)
    worker = build_worker(client, candidate.teams, candidate.backend, task_queue=task_queue,
                          tool_activities=tools, live_hub=LocalHub())
    limit = asyncio.Semaphore(max(settings.concurrency, 1))

    async def one(n: int, record: Record) -> ConversationDiff:
        async with limit:
            try:
                return await replay_one(client, task_queue, f"replay-{tag}-{n}", record, candidate, settings, books)
            except RPCError as err:
                return _not_run(record, f"the replay's server refused a call: {err.message}", settings)

    async with worker:
        return list(await asyncio.gather(*(one(n, r) for n, r in enumerate(records))))
