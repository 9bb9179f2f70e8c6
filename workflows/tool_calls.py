"""Running one tool call from the workflow: the size guard, a person's approval when the tool
needs one, then the `run_tool` activity (or `run_local_tool` for cheap, pure tools).

Whatever happens, the model gets exactly one tool message back: a failure after the tool's
retries is an error message it can read, never an exception that ends the turn.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from .human import HumanDesk
    from .messages import Message, TeamSpec, ToolCall, ToolRequest, ToolResult
    from .state import ConversationState

MAX_ARGUMENT_BYTES = 256 * 1024
"""Tool arguments above this are refused before scheduling: an oversized activity input fails
the workflow task, which Temporal retries forever (pydantic-ai issue 7164)."""


def activity_failure_text(err: BaseException) -> str:
    cause = err.cause if isinstance(err, ActivityError) and err.cause else err
    return str(cause.message if isinstance(cause, ApplicationError) else cause)


class ToolRunner:
    """Runs tool calls for one turn; counts the activities in flight, so the workflow knows
    when it may continue as new without abandoning one."""

    def __init__(self, team: TeamSpec, state: ConversationState, desk: HumanDesk):
        self.team = team
        self.state = state
        self.desk = desk
        self.in_flight = 0
        self.handoffs: dict[str, str] = {}
        """Tool call id -> agent, for tools that returned `Result(agent=...)`."""

    async def run(self, agent: str, scope: int, msg_index: int, call: ToolCall) -> Message:
        spec = self.team.tools[call.name]

        def reply(result: ToolResult) -> Message:
            self.state.context.update(result.context_updates)
            kind = "error" if result.is_error else "message"
            if result.handoff_to and result.handoff_to in self.team.agents:
                self.handoffs[call.id] = result.handoff_to
                kind = "handoff"
            return Message(role="tool", content=result.content, name=call.name,
                           tool_call_id=call.id, scope=scope, kind=kind)  # type: ignore[arg-type]

        size = len(call.arguments.encode())
        if size > MAX_ARGUMENT_BYTES:
            return reply(ToolResult(is_error=True, content=(
                f"Error: the arguments for {call.name} are {size:,} bytes, over the "
                f"{MAX_ARGUMENT_BYTES:,}-byte limit. Pass a smaller input.")))
        if spec.needs_approval:
            approved, note = await self.desk.approve(agent, call)
            if not approved:
                return reply(ToolResult(content=note))
        request = ToolRequest(
            tool=call.name,
            arguments=call.arguments,
            tool_call_id=call.id,
            idempotency_key=f"{workflow.info().workflow_id}/{msg_index}/{call.id}",
            agent=agent,
            context=dict(self.state.context) if spec.context_params else {},
        )
        retry = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=spec.max_attempts)
        timeout = timedelta(seconds=spec.timeout_seconds)
        self.in_flight += 1
        try:
            if spec.local:
                result = await workflow.execute_local_activity(
                    "run_local_tool", request, result_type=ToolResult,
                    start_to_close_timeout=timeout, retry_policy=retry, summary=f"tool: {call.name}")
            else:
                result = await workflow.execute_activity(
                    "run_tool", request, result_type=ToolResult, task_queue=spec.task_queue,
                    start_to_close_timeout=timeout, retry_policy=retry, summary=f"tool: {call.name}")
        except ActivityError as err:
            result = ToolResult(is_error=True, content=(
                f"Error: {call.name} failed after {spec.max_attempts} attempts: "
                f"{activity_failure_text(err)}"))
        finally:
            self.in_flight -= 1
        return reply(result)
