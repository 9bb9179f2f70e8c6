"""The recorded conversations a replay starts from: exported history files
(`temporal workflow show -o json`), workflow ids, or a visibility query. Ids and queries are
read from the configured server (every run of a conversation, across continue-as-new), and
payloads encrypted at rest are decoded with the client's codec."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payloads
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import PayloadCodec

from durable_teams.client.checkpoints import run_histories
from durable_teams.replay.history_records import UnreadableHistory, child_ids, record_of
from durable_teams.replay.records import Record

MAX_QUERIED = 10_000
"""The most conversations one query replays (a query with no bound would list them all)."""


def record_from_file(path: str | Path) -> Record:
    """The record in an exported history file; its workflow id is the file's name (the export
    does not hold it). A file that is not one says why (UnreadableHistory)."""
    path = Path(path)
    try:
        history = WorkflowHistory.from_json(path.stem, path.read_text("utf-8"))
    except OSError as err:
        raise UnreadableHistory(f"cannot read {path}: {err.strerror or err}") from None
    except Exception as err:  # noqa: BLE001 - not a history's JSON: say so, in a line
        raise UnreadableHistory(f"{path} is not an exported history ({type(err).__name__}: "
                                f"{str(err).splitlines()[0] if str(err) else ''})") from None
    return record_of([history])


async def _decode_payloads(codec: PayloadCodec, container: Payloads) -> None:
    if container.payloads:
        decoded = await codec.decode(list(container.payloads))
        del container.payloads[:]
        container.payloads.extend(decoded)


async def _decode_event(codec: PayloadCodec, event: HistoryEvent) -> None:
    """Decode, in place, the payloads a record reads from `event`."""
    for attrs, name in (
            (event.workflow_execution_started_event_attributes, "input"),
            (event.activity_task_scheduled_event_attributes, "input"),
            (event.activity_task_completed_event_attributes, "result"),
            (event.workflow_execution_signaled_event_attributes, "input"),
            (event.workflow_execution_completed_event_attributes, "result")):
        await _decode_payloads(codec, getattr(attrs, name))
    await _decode_payloads(codec, event.workflow_execution_update_accepted_event_attributes.accepted_request.input.args)
    memo = event.workflow_properties_modified_event_attributes.upserted_memo.fields
    for key in list(memo):
        memo[key].CopyFrom((await codec.decode([memo[key]]))[0])
    details = event.marker_recorded_event_attributes.details
    if "result" in details:
        await _decode_payloads(codec, details["result"])


async def record_of_workflow(client: Client, workflow_id: str) -> Record:
    """The record of the conversation `workflow_id`: every run, and its nested teams' child
    workflows (their steps where each started)."""
    runs = await run_histories(client, workflow_id)
    codec = client.data_converter.payload_codec
    if codec is not None:
        for history in runs:
            for event in history.events:
                await _decode_event(codec, event)
    children = {child: await record_of_workflow(client, child) for child in child_ids(runs)}
    return record_of(runs, workflow_id, children)


async def workflow_ids(client: Client, query: str, limit: int = MAX_QUERIED) -> list[str]:
    """The conversations a visibility query finds (`Team = "support" AND CloseTime > "..."`),
    newest first, each once."""
    found: list[str] = []
    async for execution in client.list_workflows(f"WorkflowType = 'TeamWorkflow' AND ({query})", limit=limit):
        if execution.id not in found:
            found.append(execution.id)
    return found


def split_sources(sources: Sequence[str]) -> tuple[list[str], list[str]]:
    """`sources` as (history files, workflow ids): a file is a .json name or an existing file."""
    files = [s for s in sources if s.endswith(".json") or Path(s).is_file()]
    return files, [s for s in sources if s not in files]


async def records_of(client: Client | None, sources: Sequence[str], query: str | None = None) -> list[Record]:
    """The records of `sources` (history files, or workflow ids read through `client`) and of
    the conversations `query` finds."""
    files, ids = split_sources(sources)
    records = [await asyncio.to_thread(record_from_file, path) for path in files]
    if (ids or query) and client is None:
        raise UnreadableHistory("workflow ids and queries are read from a Temporal server: none is configured")
    if query and client is not None:
        ids += [i for i in await workflow_ids(client, query) if i not in ids]
    for workflow_id in ids:
        assert client is not None
        records.append(await record_of_workflow(client, workflow_id))
    return records
