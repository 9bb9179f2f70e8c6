"""`durable-teams worker` forwards the SDK core's log to Python's logging (not to stdout, where
an unread pipe stops the worker), with the warning local calls cause by design lowered to INFO."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_teams.examples import faang
from durable_teams.worker.core_log import CORE_LOGGER, ExpectedWarnings, core_log_runtime
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import LOCAL, SlowModel

pytestmark = pytest.mark.workflow


def record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord(CORE_LOGGER, level, "(sdk-core)", 0, message, (), None)


def test_only_the_local_call_warning_is_lowered() -> None:
    expected = record("[sdk_core::managed_run] [TMPRL1104] run:4:1 Workflow task duration exceeded 5 seconds.")
    other = record("[sdk_core::worker] Error polling: unavailable")
    assert ExpectedWarnings().filter(expected) and ExpectedWarnings().filter(other)
    assert (expected.levelno, expected.levelname) == (logging.INFO, "INFO")
    assert (other.levelno, other.levelname) == (logging.WARNING, "WARNING")


class Caught(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if "TMPRL1104" in record.getMessage():
            self.seen.set()


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_long_local_call_logs_at_info_through_python_logging_not_stdout(
        client: Client, task_queue: str, capfd: pytest.CaptureFixture[str]) -> None:
    caught = Caught()
    logging.getLogger(CORE_LOGGER).addHandler(caught)
    try:
        forwarding = await Client.connect(client.service_client.config.target_host, runtime=core_log_runtime(),
                                          data_converter=pydantic_data_converter)
        compiled = faang.build().compile()
        compiled.spec.model_calls = LOCAL
        model = SlowModel({"supervisor": [faang.SCRIPT["supervisor"][-1]]}, 5.5)  # one call, over 5 s
        async with running_worker(forwarding, task_queue, [compiled], model):
            result = await forwarding.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=compiled.spec, task=faang.QUESTION),
                id=f"core-log-{uuid.uuid4().hex[:6]}", task_queue=task_queue)
            assert await asyncio.to_thread(caught.seen.wait, 30), "the core's warning never arrived"
    finally:
        logging.getLogger(CORE_LOGGER).removeHandler(caught)
    assert result.status == "completed" and model.began == 1
    warned = [r for r in caught.records if "TMPRL1104" in r.getMessage()]
    assert [(r.levelname, r.name.startswith(CORE_LOGGER)) for r in warned] == [("INFO", True)]
    assert "TMPRL1104" not in capfd.readouterr().out
