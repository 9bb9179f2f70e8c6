"""`webhook=` on a LangGraph run or cron: the URL is checked before the run begins (a public http(s)
address unless the operator allows others: the rule of A2A push notifications), then a
`RunWebhookWorkflow` (durable_teams/workflows/run_webhooks.py) watches the run and delivers it
once it ends, at least once, retried (a cron's: each run it fires, durable_teams/workflows/
scheduled_turns.py). The operator's choices, from the gateway's environment:

- `DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ALLOW_PRIVATE=1`: deliver to loopback and private addresses too;
- `DURABLE_TEAMS_LANGGRAPH_WEBHOOK_RETRY_SECONDS` (default 1, doubling up to 5 minutes) and
  `DURABLE_TEAMS_LANGGRAPH_WEBHOOK_ATTEMPTS` (default 8);
- `DURABLE_TEAMS_LANGGRAPH_WEBHOOK_POLL_SECONDS` (default 1): how often the run is read."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Any

from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_teams.gateway.core.tenant_ids import workflow_id
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_wire import RunRef, Unsupported
from durable_teams.workflows.push_targets import from_the_start, public_refusal
from durable_teams.workflows.run_webhooks import RunWebhookWorkflow, WebhookInput
from durable_teams.workflows.scheduled_turns import CronWebhook

ENV = "DURABLE_TEAMS_LANGGRAPH_WEBHOOK_"
RUN_ID = RunRef(turn=0).id.removesuffix("0") + "{turn}"
"""A turn's run's id (`RunRef.id`) as a format of its number, for a cron's runs."""
MAX_URL = 2048
WATCH_ATTEMPTS = 3
"""Tries at starting a run's webhook watcher (`DURABLE_TEAMS_LANGGRAPH_WEBHOOK_WATCH_RETRY_SECONDS`
apart, doubling; default 0.2)."""
log = logging.getLogger(__name__)


def allow_private() -> bool:
    return os.environ.get(ENV + "ALLOW_PRIVATE", "").strip().lower() in ("1", "true", "yes")


def number(name: str, default: float, low: float, high: float) -> float:
    text = os.environ.get(ENV + name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        raise ValueError(f"{ENV}{name}={text[:40]!r} is not a number") from None
    return min(max(value, low), high)


async def resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_webhook(url: object) -> str:
    """The webhook URL, or `Unsupported` (422) saying why it is refused."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise Unsupported(f"webhook: a URL of at most {MAX_URL} characters")
    refused = await public_refusal(url, allow_private(), resolve)
    if refused:
        raise Unsupported(f"webhook {url[:200]!r}: {refused}")
    return url


def webhook_failure(failure: str | None) -> dict[str, str]:
    """The `X-Webhook-Error` header of a run whose webhook is not watched (`runs.wait` and
    `runs.stream` answer the run's values, not the run: the failure goes in a header)."""
    if not failure:
        return {}
    return {"X-Webhook-Error": " ".join(failure.encode("ascii", "replace").decode().split())[:500]}


def cron_webhook(team: str, url: str, scope: str | None) -> CronWebhook:
    """A cron's webhook (`check_webhook`ed), with the operator's choices of now: each run the
    cron fires is told to `url` once it ends, as a run's webhook is (its thread by the id the
    cron's tenant knows it by)."""
    return CronWebhook(url=url, assistant_id=team, run_id=RUN_ID, tenant_prefix=workflow_id(scope, "") or None,
                       **choices())


def choices() -> dict[str, Any]:
    """The operator's choices for deliveries, from the gateway's environment."""
    return {"allow_private": allow_private(), "retry_seconds": number("RETRY_SECONDS", 1.0, 0.001, 3600.0),
            "attempts": int(number("ATTEMPTS", 8, 1, 100)), "poll_seconds": number("POLL_SECONDS", 1.0, 0.01, 60.0)}


async def watch_run(gw: Gateway, thread: str, run: RunRef, team: str, url: str, shown: str | None = None
                    ) -> str | None:
    """Start the workflow that delivers the run's webhook once it ends; tried `WATCH_ATTEMPTS`
    times under one workflow id (a start that went in but whose answer was lost is not a second
    watcher). The run went in already, so a failure is not raised (the client would send the run
    again: twice): it is returned, logged, and shown on the run (`kwargs.webhook_error`)."""
    last = from_the_start() if run.resumed is None else None  # a resumed run: from the turn's state now
    inp = WebhookInput(thread=thread, turn=run.turn, run_id=run.id, assistant_id=team, url=url, last=last,
                       shown_thread=shown if shown != thread else None, **choices())
    watcher, pause = f"langgraph-webhook-{uuid.uuid4().hex}", number("WATCH_RETRY_SECONDS", 0.2, 0.0, 10.0)
    for attempt in range(WATCH_ATTEMPTS):
        try:
            await gw.client.start_workflow(RunWebhookWorkflow.run, inp, id=watcher, task_queue=gw.task_queue,
                                           id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
            return None
        except WorkflowAlreadyStartedError:  # an earlier attempt went in: its answer was lost
            return None
        except Exception as err:  # noqa: BLE001 - the run is in: told, never raised
            why = f"went in, but its webhook's watcher did not start: {err}"
            if attempt + 1 < WATCH_ATTEMPTS:
                await asyncio.sleep(pause * 2**attempt)
    log.error("run %s of thread %s %s", run.id, thread, why)
    return f"run {run.id} of thread {shown or thread} {why}"  # the caller's id for the thread, as the run shows it
