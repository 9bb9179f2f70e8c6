"""Which crontab lines never fire (gateway/doors/langgraph/langgraph_cron_times.py), and how a
tenant's thread id maps to its workflow and back (langgraph_tenancy.py). Pure: no server."""

from __future__ import annotations

import pytest

from durable_teams.gateway.core.tenant_ids import owned, shown, workflow_id
from durable_teams.gateway.doors.langgraph.langgraph_cron_times import never_fires

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(("schedule", "never"), [
    ("0 0 30 2 *", True),  # February 30th
    ("0 0 30 2 1", True),  # a weekday too: Temporal needs both
    ("0 0 31 4,6,9,11 *", True),
    ("0 0 30-31 feb *", True),
    ("0 0 31 2-4/2 *", True),  # February and April
    ("0 0 29 2 *", False),  # leap years
    ("0 0 31 */2 *", False),  # January, March, ...
    ("0 0 31 * 1", False),
    ("*/5 * * * *", False),
    ("@daily", False),
    ("0 0 L 2 *", False),  # not read here: Temporal's own check
    ("0 0 31 13 *", False),  # out of range: Temporal's own error names it
])
def test_a_schedule_whose_days_fall_in_none_of_its_months_never_fires(schedule: str, never: bool) -> None:
    assert never_fires(schedule) is never


def test_a_scoped_callers_thread_is_its_workflow_under_its_scope() -> None:
    assert workflow_id("shop", "x") == "shop:x" and workflow_id(None, "x") == "x"
    assert shown("shop", "shop:x") == "x" and shown(None, "shop:x") == "shop:x"
    assert workflow_id("shop", "crm:x") == "shop:crm:x" and shown("shop", "shop:crm:x") == "crm:x"
    assert owned("shop", "shop:x") and not owned("shop", "crm:x") and not owned("shop", "x") and owned(None, "x")
