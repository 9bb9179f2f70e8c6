"""Recorded histories replay under the current workflow code without non-determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_teams.workflows.conversation import TeamWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_recorded_histories() -> None:
    assert [p.name for p in HISTORIES] == [
        "acme_conversation.json", "faang.json", "faang_teams.json", "routing_conversation.json"]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())  # noqa: ASYNC240 - tiny file
    replayer = Replayer(workflows=[TeamWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
