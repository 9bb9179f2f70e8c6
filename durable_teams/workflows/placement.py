"""Where a conversation's model calls run: on the worker that holds the workflow, while it lives.

A model call reads its agent's view straight from the workflow instance when it runs in the
worker process that holds it (workflows/offered_views.py); anywhere else it costs a query. With one
worker that is always so. With several, two mechanisms keep it so:

1. Eager dispatch (nothing to do here): a call scheduled on the workflow's own task queue is
   handed back by the server, with the workflow task's completion, to the worker that scheduled
   it, when the server allows it (`system.enableActivityEagerExecution`: on in the dev server,
   off by default in a self-hosted cluster) and that worker has a free activity slot.
2. Worker-specific task queues (Temporal's pattern): every worker also polls a queue of its
   own, and serves `worker_task_queue`, a local activity that names it. Local activities run in
   the worker that runs the workflow task, and their result is recorded (a marker event), so the
   workflow learns where it is cached, deterministically, on replay too.

Each model call reports whether its view was read in process (`ModelResponse.read_in_process`).
A run starts on (1); after the first call read elsewhere it asks where it is (2) and schedules
its calls on that worker's queue; after a call there is read elsewhere again (the workflow moved
to another worker, or was evicted) it asks again. A call on a worker queue may wait at most
`ModelCalls.worker_queue_seconds` for that worker to take it: when the worker is gone the call times out
before it ever started (Temporal does not retry that timeout), and the workflow runs it on the
shared task queue, so nothing the call did is repeated. Everything here is decided from
recorded results: replay takes the same path.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

LOCATE_ACTIVITY = "worker_task_queue"


class ModelPlacement:
    """Picks the task queue of each model call in one workflow run."""

    def __init__(self) -> None:
        self.pinned = False
        """True once a call was read outside the workflow's process: use worker queues."""
        self.queue: str | None = None
        """The worker queue of the worker found last (None: ask before the next call)."""
        self._asking: asyncio.Future[str | None] | None = None
        self.unavailable = False
        """The workflow's worker serves no queue of its own: stay on the shared queue."""
        self.fallbacks = 0
        """Calls re-run on the shared queue because their worker queue's worker was gone."""

    async def next_queue(self) -> str | None:
        """The task queue for the next model call; None: the workflow's own."""
        if not self.pinned or self.unavailable:
            return None
        if self.queue is None:
            if self._asking is None:  # parallel calls share one question
                self._asking = asyncio.ensure_future(_locate())
            asking = self._asking
            found = await asking
            if self._asking is asking:
                self.queue, self._asking = found or None, None
                self.unavailable = found is None
        return self.queue

    def observe(self, queue: str | None, read_in_process: bool | None) -> None:
        """Learn from a call's result where the workflow is (None: not reported)."""
        if read_in_process is False:
            self.pinned = True
            if queue == self.queue:
                self.queue = None  # it moved away from there: ask again

    def lost(self, queue: str) -> None:
        """`queue`'s worker did not take a call in time: treat it as gone."""
        self.fallbacks += 1
        if self.queue == queue:
            self.queue = None


async def _locate() -> str | None:
    """This workflow task's worker's own queue; "" if it did not say this time (ask again
    later); None if the worker serves none (a worker built by hand)."""
    try:
        found = await workflow.execute_local_activity(
            LOCATE_ACTIVITY, result_type=str, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=1))
    except ValueError:  # a worker built by hand, without the activity: the SDK refuses to start it
        return None
    except ActivityError:  # e.g. timed out on a worker too busy: the shared queue, this time
        return ""
    return found


def is_not_started(err: ActivityError) -> bool:
    """Whether `err` is a schedule-to-start timeout: the call never began anywhere."""
    cause = err.cause
    return isinstance(cause, ActivityTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START
