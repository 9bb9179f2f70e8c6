"""The SDK core's log, through Python's logging.

Left alone, the Temporal SDK's Rust core writes its warnings straight to the process's standard
output. A supervisor that pipes a worker's stdout and never reads it then stops the worker
once the pipe holds 64 KB: the core blocks in the middle of a write, and with it every workflow
task (docs/performance.md, "The wedge was the benchmark's"); and a CLI command's warnings would
land in the middle of its output (`id=$(durable-teams run ... --no-wait)`). `durable-teams worker`
and the CLI's commands forward the core's warnings to the `temporalio.core` logger instead, which
writes to standard error unless the application configures logging otherwise.

One warning is expected, not a problem: `[TMPRL1104] Workflow task duration exceeded 5 seconds`
comes once per turn that runs local calls for more than 5 s (the workflow task stays open while
they run). It is logged at INFO.
"""

from __future__ import annotations

import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

CORE_LOGGER = "temporalio.core"
EXPECTED_WITH_LOCAL_CALLS = ("[TMPRL1104]",)
"""Core warnings that local calls cause by design: logged at INFO."""


class ExpectedWarnings(logging.Filter):
    """Lowers the core's warnings that local calls cause by design to INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and any(
                code in record.getMessage() for code in EXPECTED_WITH_LOCAL_CALLS):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def core_log_runtime() -> Runtime:
    """A Temporal runtime whose core logs its warnings and errors to the `temporalio.core` logger."""
    logger = logging.getLogger(CORE_LOGGER)
    if not any(isinstance(f, ExpectedWarnings) for f in logger.filters):
        logger.addFilter(ExpectedWarnings())
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logger))))


_forwarding: Runtime | None = None


def forward_core_log() -> None:
    """Make `core_log_runtime()` the default runtime, before any client is made (a process's
    entry point: `durable-teams worker` calls it once its settings are checked, the CLI before
    a command that talks to Temporal). Once per process: a runtime is a thread pool."""
    global _forwarding
    if _forwarding is None:
        _forwarding = core_log_runtime()
        Runtime.set_default(_forwarding, error_if_already_set=False)
