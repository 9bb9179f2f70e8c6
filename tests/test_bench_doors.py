"""The door-calls benchmark counts what the Temporal frontend served for a turn from the dev
server's own metrics (bench/door_calls.py): the workers' task polls and liveness reports, other
services' requests and the server's own system workflows are not the turn's."""

from __future__ import annotations

import pytest

from bench.door_calls import frontend_requests

pytestmark = pytest.mark.pure

METRICS = """\
# HELP service_requests service_requests counter
# TYPE service_requests counter
service_requests{namespace="_unknown_",operation="GetSystemInfo",service_name="frontend"} 4
service_requests{namespace="default",operation="QueryWorkflow",service_name="frontend"} 17
service_requests{namespace="default",operation="QueryWorkflow",service_name="history"} 17
service_requests{namespace="default",operation="PollWorkflowTaskQueue",service_name="frontend"} 90
service_requests{namespace="default",operation="PollActivityTaskQueue",service_name="frontend"} 40
service_requests{namespace="default",operation="RecordWorkerHeartbeat",service_name="frontend"} 3
service_requests{namespace="default",operation="PollWorkflowExecutionHistory",service_name="frontend"} 1e+01
service_requests{namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 2
service_requests_total_other{namespace="default",operation="QueryWorkflow",service_name="frontend"} 5
"""


def test_only_the_frontends_requests_of_clients_and_turns_are_counted() -> None:
    assert frontend_requests(METRICS) == {"GetSystemInfo": 4, "QueryWorkflow": 17, "PollWorkflowExecutionHistory": 10}
