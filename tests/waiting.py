"""One way for a test to wait for something it gets no event for (a query's answer, a port, a
file): poll it until it holds, and fail with what was awaited and what was seen last.

A query that times out or is refused on a loaded machine is asked again, so a slow server
makes a test slower, never red; only the deadline ends the wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import Question

T = TypeVar("T")


class NotYet(Exception):  # noqa: N818 - read as "not yet: <what was seen>"
    """Raised by a check that does not hold yet, with what it saw (a failure shows the last)."""

WITHIN = 120.0
"""Seconds any wait allows by default: far above what a loaded CI machine needs."""


async def until(check: Callable[[], Awaitable[T]], what: str = "the condition", within: float = WITHIN,
                every: float = 0.05) -> T:
    """The first truthy value `check()` returns, polled every `every` seconds. A check that
    wants the failure to say more raises `NotYet(what it saw)` instead of returning falsy."""
    deadline = asyncio.get_running_loop().time() + within
    last: object = "nothing yet"
    while True:
        try:
            value = await check()
            if value:
                return value
            last = value
        except RPCError as err:
            last = f"RPCError {err.status}: {err.message}"
        except NotYet as seen:
            last = seen.args[0] if seen.args else None
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {within} s: {what} (last seen: {last!r})")
        await asyncio.sleep(every)


def until_sync(check: Callable[[], T], what: str = "the condition", within: float = WITHIN,
               every: float = 0.05, retry: tuple[type[BaseException], ...] = ()) -> T:
    """`until` for code without an event loop (a process starting, a port opening); an
    exception of a `retry` type counts as 'not yet'."""
    deadline = time.monotonic() + within
    last: object = "nothing yet"
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except retry as err:
            last = f"{type(err).__name__}: {err}"
        except NotYet as seen:
            last = seen.args[0] if seen.args else None
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what} (last seen: {last!r})")
        time.sleep(every)


async def questions(handle: WorkflowHandle) -> list[Question]:
    return await handle.query(TeamWorkflow.pending_questions)


async def asked(handle: WorkflowHandle, question_id: str) -> bool:
    """Whether `handle`'s conversation waits on the question `question_id`."""
    return question_id in [q.question_id for q in await questions(handle)]


async def pending_question(handle: WorkflowHandle, within: float = WITHIN) -> Question:
    """The first question `handle`'s conversation waits on (a client gets no event when a
    question is asked)."""
    pending = await until(lambda: questions(handle), f"a question pending on {handle.id}", within)
    return pending[0]
