"""Which of our search attributes (`AwaitingHuman`, `Team`, `Task`) a namespace has, learned by
the worker when it starts: it registers what it may and says in one line what is missing.

Conversations ask the worker for this set (the `available_labels` activity, recorded in
their history) and upsert only what it names: a namespace without an attribute, or with it
registered under another type, never wedges a conversation (the server refuses a workflow task
that upserts an unknown attribute, and would refuse it again on every retry).
"""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio import activity
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client

from durable_teams.worker.devserver import SEARCH_ATTRIBUTES
from durable_teams.workflows.labels import AVAILABLE_LABELS_ACTIVITY

log = logging.getLogger("durable_teams.worker.search_attributes")

WANTED = SEARCH_ATTRIBUTES
"""Our search attributes and their types (the names `temporal operator` takes)."""
KINDS = {"Bool": IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
         "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD}
REFRESH_SECONDS = 60.0
"""How long a learned set is trusted: an operator may register a missing attribute later."""


def create_command(namespace: str, name: str) -> str:
    return f"temporal operator search-attribute create --namespace {namespace} --name {name} --type {WANTED[name]}"


def usable(listed: dict[str, int]) -> tuple[set[str], dict[str, str]]:
    """From a namespace's custom attributes (name -> IndexedValueType): the ones of ours it has
    with the right type, and why each other one is not usable ("missing" or "registered as Text")."""
    have: set[str] = set()
    problems: dict[str, str] = {}
    for name, kind in WANTED.items():
        found = listed.get(name)
        if found == KINDS[kind]:
            have.add(name)
        elif found is None:
            problems[name] = "missing"
        else:
            type_name = IndexedValueType.Name(found).removeprefix("INDEXED_VALUE_TYPE_").title()  # type: ignore[arg-type]
            problems[name] = f"registered as {type_name}, not {kind}"
    return have, problems


def missing_line(namespace: str, problems: dict[str, str], cause: str = "") -> str:
    """The one line a worker prints for attributes it could not use."""
    what = ", ".join(f"{name} ({why})" for name, why in problems.items())
    commands = "; ".join(create_command(namespace, name) for name, why in problems.items()
                         if why == "missing")
    line = f"search attributes not usable in namespace {namespace!r}: {what}{cause}; conversations run without them"
    return line + (f"; to add: {commands}" if commands else "")


async def _listed(client: Client) -> dict[str, int]:
    answer = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace))
    return dict(answer.custom_attributes)


async def learn_labels(client: Client, *, register: bool = True) -> tuple[frozenset[str], str | None]:
    """The attributes of ours `client`'s namespace has with the right type, after registering
    the missing ones when `register` (and allowed), and the one line to log about the others
    (None when all are usable). A namespace that will not even list its attributes (a managed
    one) is taken as having none."""
    try:
        have, problems = usable(await _listed(client))
    except Exception as err:  # noqa: BLE001 - refused or unreachable: assume none, say so
        problems = dict.fromkeys(WANTED, "not listed")
        return frozenset(), missing_line(client.namespace, problems, f" (listing refused: {err})")
    absent = [name for name, why in problems.items() if why == "missing"]
    cause = ""
    if register and absent:
        try:
            await client.operator_service.add_search_attributes(AddSearchAttributesRequest(
                namespace=client.namespace, search_attributes={n: KINDS[WANTED[n]] for n in absent}))
            have, problems = usable(await _listed(client))
        except Exception as err:  # noqa: BLE001 - a managed namespace may not allow it
            cause = f" (could not register: {err})"
    return frozenset(have), missing_line(client.namespace, problems, cause) if problems else None


_SAID: set[str] = set()


def say_once(line: str | None) -> None:
    """Log `line` as a warning, once per process (the CLI worker learns before its worker does)."""
    if line and line not in _SAID:
        _SAID.add(line)
        log.warning(line)


class LabelsActivity:
    """The worker's answer to "which labels may a conversation set?", learned once at start and
    again after REFRESH_SECONDS (without registering again)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.known: frozenset[str] | None = None
        self.learned_at = 0.0
        self._lock = asyncio.Lock()

    async def learn(self) -> frozenset[str]:
        """The set, learned (and the missing ones registered) on first use; one warning line
        when some are not usable, again only when that changes."""
        async with self._lock:
            if self.known is None or time.monotonic() - self.learned_at > REFRESH_SECONDS:
                self.known, line = await learn_labels(self.client, register=self.known is None)
                self.learned_at = time.monotonic()
                say_once(line)
            return self.known

    @activity.defn(name=AVAILABLE_LABELS_ACTIVITY)
    async def available_labels(self) -> list[str]:
        """Run by a conversation (a regular activity) before it sets a label."""
        return sorted(await self.learn())
