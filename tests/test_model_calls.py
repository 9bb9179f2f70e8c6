"""Model-call limits: defaults a person accepts, per team and per agent, and what Temporal gets."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from durable_teams import Agent, Supervisor, Swarm
from durable_teams.teams import ModelCalls
from durable_teams.workflows.model_calls import activity_options, policy_for

pytestmark = pytest.mark.pure


def test_defaults_surface_a_hung_endpoint_in_minutes_not_eighteen() -> None:
    options = activity_options(ModelCalls())
    assert options["start_to_close_timeout"] == timedelta(seconds=90)
    assert options["schedule_to_close_timeout"] == timedelta(seconds=240)
    retry = options["retry_policy"]
    assert (retry.maximum_attempts, retry.initial_interval, retry.maximum_interval) == (
        3, timedelta(seconds=1), timedelta(seconds=30))


def test_an_agent_overrides_its_team_and_a_recorded_timeout_is_kept() -> None:
    slow = ModelCalls(timeout_seconds=300, total_timeout_seconds=900)
    team = Supervisor([Agent("a", model_calls=slow), Agent("b")],
                      model_calls=ModelCalls(max_attempts=5)).compile().spec
    assert policy_for(team, team.agents["a"]) == slow
    assert policy_for(team, team.agents["b"]) == ModelCalls(max_attempts=5)
    swarm = Swarm([Agent("a")]).compile().spec
    assert policy_for(swarm, swarm.agents["a"]) == ModelCalls()


@pytest.mark.parametrize("field,value", [("timeout_seconds", 0), ("max_attempts", 0),
                                         ("total_timeout_seconds", -1),
                                         ("retry_interval_seconds", 0)])
def test_limits_that_cannot_work_are_refused_when_written(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        ModelCalls(**{field: value})
