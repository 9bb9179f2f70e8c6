"""Timeouts and retries of the `call_model` activity, and the words a user reads when it fails.

The policy comes from the team (`TeamSpec.model_calls`) or the agent (`AgentSpec.model_calls`);
see `ModelCalls` for the defaults. Activity options are not part of what replay compares, so
changing them does not disturb running conversations. Whether a call is a local activity
(`ModelCalls.local`, off by default) or a regular one is.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, RetryState
from temporalio.exceptions import TimeoutError as TimedOut

from .messages import AgentSpec, ModelCalls, TeamSpec

LOCAL_RETRY_THRESHOLD = 60.0
"""Seconds: a local call's retry that waits longer than this waits on a durable timer in a new
workflow task; shorter ones wait in the worker (the SDK's `local_retry_threshold`)."""

MAX_RETRY_INTERVAL = 30.0
"""Seconds: the longest wait between two attempts that the policy itself makes (a server's
`retry-after` may ask for longer, up to activities/model_errors.MAX_RETRY_AFTER)."""


def policy_for(team: TeamSpec, agent: AgentSpec) -> ModelCalls:
    """The agent's policy, else the team's."""
    return agent.model_calls if agent.model_calls is not None else team.model_calls


def activity_options(policy: ModelCalls) -> dict[str, Any]:
    """Keyword arguments of `workflow.execute_activity` for one model call."""
    first = policy.retry_interval_seconds
    return {
        "start_to_close_timeout": timedelta(seconds=policy.timeout_seconds),
        "schedule_to_close_timeout": timedelta(seconds=policy.total_timeout_seconds),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(seconds=first),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=max(first, MAX_RETRY_INTERVAL)),
            maximum_attempts=policy.max_attempts,
        ),
    }


def local_activity_options(policy: ModelCalls) -> dict[str, Any]:
    """Keyword arguments of `workflow.execute_local_activity` for one model call: the same
    limits and retries as a regular call."""
    return {**activity_options(policy), "local_retry_threshold": timedelta(seconds=LOCAL_RETRY_THRESHOLD)}


def _last_failure(err: BaseException | None) -> str:
    while isinstance(err, TimedOut):
        err = err.cause
    if isinstance(err, ApplicationError):
        return err.message
    return str(err) if err is not None else ""


def failure_text(err: FailureError, policy: ModelCalls, elapsed: float | None = None) -> str:
    """Why the model call failed, for the user: the activity's own message, or for a timeout
    the limits that were reached (and the last attempt's error, if any). A local activity's
    failure carries no retry state (and may come unwrapped): a retryable error that still
    ended the call ran out of time when it was a timeout or `elapsed` (seconds since the call
    was scheduled, as the workflow sees it) is near the total bound, else out of attempts."""
    cause = err.cause if isinstance(err, ActivityError) else err
    retry_state = err.retry_state if isinstance(err, ActivityError) else None
    if retry_state is None and isinstance(cause, ApplicationError) \
            and not cause.non_retryable:
        near_bound = elapsed is not None and elapsed >= policy.total_timeout_seconds * 0.9
        timed_out = near_bound or cause.type == "ModelTimeout"  # the endpoint's silence, every time
        retry_state = RetryState.TIMEOUT if timed_out else RetryState.MAXIMUM_ATTEMPTS_REACHED
    attempts = policy.max_attempts
    if isinstance(cause, TimedOut) or retry_state == RetryState.TIMEOUT:
        last = _last_failure(cause)
        text = (f"no answer within the model-call time limits ({policy.timeout_seconds:g} s per "
                f"attempt, {attempts} attempt{'s' if attempts != 1 else ''}, "
                f"{policy.total_timeout_seconds:g} s in all)")
        return f"{text}. Last error: {last}" if last else f"{text}."
    text = _last_failure(cause) or str(err)
    if retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED and attempts > 1:
        return f"{text.rstrip('.')} (gave up after {attempts} attempts)."
    return text
