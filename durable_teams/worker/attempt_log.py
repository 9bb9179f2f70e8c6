"""One line in the worker's log per failed activity attempt.

The Temporal SDK logs every failed attempt ("Completing activity as failed") at WARNING with its
whole traceback: 70 lines for one refused model call, repeated for each retry, while the CLI
says the same in one line. `durable-teams worker` keeps the warning to one line naming the
error's type and message, and logs the traceback at DEBUG on the same logger
(`temporalio.activity`) for whoever turns that on.
"""

from __future__ import annotations

import logging

ACTIVITY_LOGGER = "temporalio.activity"
FAILED_ATTEMPT = "Completing activity as failed"


class OneLineAttempts(logging.Filter):
    """Shortens the SDK's failed-attempt warnings to one line; the traceback goes to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not record.exc_info \
                or not str(record.msg).startswith(FAILED_ATTEMPT):
            return True
        err = record.exc_info[1]
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(logging.DEBUG):  # the whole story, for whoever asked for it
            logger.debug(record.getMessage(), exc_info=record.exc_info)
        text = (str(getattr(err, "message", None) or err).strip().splitlines() or [""])[0]
        record.msg = f"{record.getMessage()}: {type(err).__name__}{': ' + text if text else ''}"
        record.args = None
        record.exc_info = record.exc_text = None
        return True


def one_line_attempt_failures() -> None:
    """Install the filter on the SDK's activity logger (once per process)."""
    logger = logging.getLogger(ACTIVITY_LOGGER)
    if not any(isinstance(f, OneLineAttempts) for f in logger.filters):
        logger.addFilter(OneLineAttempts())
