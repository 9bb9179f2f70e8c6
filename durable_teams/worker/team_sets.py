"""Which teams a worker serves, in its identity, so a worker can tell that another one on its
task queue serves other teams.

Temporal gives any task of a queue to any worker polling it: a conversation, a tool call or the
`resolve_team` of a team that only some of the queue's workers serve fails on the others
(`UnknownTeam`, or an unknown-tool error the model reads). So every worker on one task queue
must serve the same teams. The mistake is easy to make on a cluster set up by someone else, and
invisible until conversations fail at random; this makes it said: at start (a warning naming the
other workers) and in the failure itself.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterable

from temporalio import activity
from temporalio.client import Client

from durable_teams.client.server_state import SCRIPTED_IDENTITY, workers_on

TEAMS_MARK = "teams="


def team_set(names: Iterable[str]) -> str:
    """A short digest of a set of team names (the same set, the same digest on every machine)."""
    return hashlib.sha256("\n".join(sorted(set(names))).encode()).hexdigest()[:10]


def worker_identity(names: Iterable[str], scripted: bool = False) -> str:
    """`pid@host teams=<digest>`, plus the scripted-model mark clients look for."""
    identity = f"{os.getpid()}@{socket.gethostname()} {TEAMS_MARK}{team_set(names)}"
    return f"{identity} {SCRIPTED_IDENTITY}" if scripted else identity


def team_set_in(identity: str) -> str | None:
    """The digest in a worker identity, or None (a worker that does not say, e.g. an older one)."""
    for word in identity.split():
        if word.startswith(TEAMS_MARK):
            return word[len(TEAMS_MARK):]
    return None


async def workers_serving_other_teams(client: Client, task_queue: str, names: Iterable[str]) -> list[str]:
    """Identities of the workers polling `task_queue` lately whose teams differ from `names`."""
    mine = team_set(names)
    identities = await workers_on(client, task_queue)
    return sorted({w for w in identities if team_set_in(w) not in (None, mine)})


def named(identities: list[str]) -> str:
    """Workers by their `pid@host` (no more than three named)."""
    more = f" and {len(identities) - 3} more" if len(identities) > 3 else ""
    return ", ".join(w.split()[0] for w in identities[:3]) + more


def mixed_queue_line(task_queue: str, others: list[str]) -> str:
    """The warning for a queue whose workers serve different teams (no secrets: pids and hosts)."""
    return (f"task queue {task_queue!r} has workers serving other teams ({named(others)}; polling in the "
            "last 90 s, so a worker that just stopped shows here too): any worker may "
            "take any conversation, so conversations of a team some workers lack fail with UnknownTeam. "
            "Give every worker on one task queue the same --team modules, or each set of teams its own "
            "TEMPORAL_TASK_QUEUE.")


async def mixed_queue_note(served: Iterable[str]) -> str:
    """In an activity that met a team or tool it does not know: a sentence saying that workers
    on its task queue serve other teams than `served` (the likely cause), else ""."""
    queue = activity.info().task_queue
    try:
        others = await workers_serving_other_teams(activity.client(), queue, served)
    except Exception:  # noqa: BLE001 - only a hint: a refused or failed look-up says nothing
        return ""
    if not others:
        return ""
    return (f" Other workers on task queue {queue!r} serve other teams ({named(others)}): every worker on "
            "one task queue must serve the same teams.")
