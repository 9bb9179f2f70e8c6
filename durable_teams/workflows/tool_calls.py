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
from temporalio.exceptions import TimeoutError as TemporalTimeout

with workflow.unsafe.imports_passed_through():
    from . import mcp_tools as mcp
    from .breakpoints import Breakpoints, pauses
    from .human import HumanDesk
    from .messages import Message, TeamSpec, ToolCall, ToolRequest, ToolResult, ToolSpec
    from .state import ConversationState
    from .tenancy import tenant_of

MAX_ARGUMENT_BYTES = 256 * 1024
"""Tool arguments above this are refused before scheduling: an oversized activity input fails
the workflow task, which Temporal retries forever (pydantic-ai issue 7164)."""


TOOL_TIMEOUT = "ToolTimeout"
"""The worker's own deadline for a tool (activities/tool_activities.py), like Temporal's timeout."""


def activity_failure_text(err: BaseException) -> str:
    cause = err.cause if isinstance(err, ActivityError) and err.cause else err
    return str(cause.message if isinstance(cause, ApplicationError) else cause)


def tool_failure_message(spec: ToolSpec, err: BaseException) -> str:
    """What the model is told when a tool's activity failed: whether it timed out, and that
    it may have done its work all the same (and whether it was tried again)."""
    cause = err.cause if isinstance(err, ActivityError) and err.cause else err
    timed_out = isinstance(cause, TemporalTimeout) or (
        isinstance(cause, ApplicationError) and cause.type == TOOL_TIMEOUT)
    what = (f"did not finish within {spec.timeout_seconds:g}s" if timed_out
            else f"failed: {activity_failure_text(err)}")
    attempts = run_attempts(spec)
    if attempts == 1:
        return f"Error: {spec.name} {what}. The tool may or may not have completed; it was not retried."
    return (f"Error: {spec.name} {what} (it is idempotent and was run up to {attempts} times). "
            "It may or may not have completed.")


def run_attempts(spec: ToolSpec) -> int:
    """At most once, unless the tool is declared idempotent (a spec built by hand or recorded
    before that flag existed may say more; it is not trusted)."""
    return max(spec.max_attempts, 1) if spec.idempotent else 1


def sendable(text: str) -> str:
    """`text` without lone surrogates: a payload holding one cannot be encoded, and a workflow
    task that cannot schedule its activity would fail again on every retry."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="replace").decode()
    return text


def unknown_agent_note(content: str, agent: str, agents: list[str]) -> str:
    """The tool message for a tool that returned `Result(agent=...)` naming no agent of the
    team: its result, then why the conversation was not handed over."""
    note = (f"Error: there is no agent named {agent!r}, so the conversation was not handed "
            f"over. Agents: {', '.join(agents)}.")
    return f"{content}\n\n{note}" if content else note


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
        self.breaks = Breakpoints(team, desk)
        self.stopped: dict[str, str] = {}
        """Tool call id -> why, for calls a person stopped the run after (a breakpoint)."""

    async def run(self, agent: str, agent_run: int, msg_index: int, call: ToolCall, position: int = 0) -> Message:
        """Run `call`, the `position`-th call of the message at `msg_index`, once (or, for an
        idempotent tool, up to its attempts) and answer it with one tool message."""
        spec = self.team.tools[call.name]

        def reply(result: ToolResult) -> Message:
            self.state.context.update(result.context_updates)
            kind = "error" if result.is_error else "message"
            content = result.content
            if result.handoff_to is not None and result.handoff_to in self.team.agents:
                self.handoffs[call.id] = result.handoff_to
                kind = "handoff"
            elif result.handoff_to is not None:  # the model must learn the handoff did not happen
                kind = "error"
                content = unknown_agent_note(content, result.handoff_to, list(self.team.agents))
            return Message(role="tool", content=content, name=call.name, tool_call_id=call.id,
                           agent_run=agent_run, kind=kind, custom=result.custom)  # type: ignore[arg-type]

        size = len(call.arguments.encode())
        if size > MAX_ARGUMENT_BYTES:
            return reply(ToolResult(is_error=True, content=(
                f"Error: the arguments for {call.name} are {size:,} bytes, over the "
                f"{MAX_ARGUMENT_BYTES:,}-byte limit. Pass a smaller input.")))
        edited = ""
        if spec.needs_approval:
            approved, note = await self.desk.approve(agent, call)
            if not approved:
                return reply(ToolResult(content=note))
        elif self.breaks.on and pauses(self.team, "before", agent, call.name):  # declared teams only
            arguments, edited = await self.breaks.before_tool(agent, call)
            if arguments is None:
                return reply(ToolResult(content=edited))
            call = call.model_copy(update={"arguments": arguments})
        result = await self._execute(spec, call, self._request(agent, msg_index, position, call, spec))
        if self.breaks.on and pauses(self.team, "after", agent, call.name):
            result = await self._after(agent, call, result)
        if edited:  # the model learns its call ran with a person's arguments
            result = result.model_copy(update={"content": edited + result.content})
        return reply(result)

    def _request(self, agent: str, msg_index: int, position: int, call: ToolCall, spec: ToolSpec) -> ToolRequest:
        """What the tool's activity is given for `call`."""
        return ToolRequest(
            tool=call.name,
            arguments=sendable(call.arguments),
            tool_call_id=call.id,
            # the position tells apart two calls a model gave the same id
            idempotency_key=f"{workflow.info().workflow_id}/{msg_index}/{position}/{call.id}",
            agent=agent,
            context=dict(self.state.context) if spec.context_params else {},
            timeout_seconds=spec.timeout_seconds,
            team=self.team.name,
            tenant=tenant_of(self.state.context),
        )

    async def _execute(self, spec: ToolSpec, call: ToolCall, request: ToolRequest) -> ToolResult:
        """Run the tool's activity (local, its own, or an MCP server's) with the tool's retries
        and timeout; a failure is an error result the model reads."""
        retry = RetryPolicy(initial_interval=timedelta(seconds=spec.retry_interval_seconds),
                            maximum_attempts=run_attempts(spec))
        # a little slack over the worker's own deadline, which reports the timeout first
        timeout = timedelta(seconds=spec.timeout_seconds * 1.1 + 1)
        self.in_flight += 1
        try:
            if spec.local:
                result = await workflow.execute_local_activity(
                    "run_local_tool", request, result_type=ToolResult,
                    start_to_close_timeout=timeout, retry_policy=retry, summary=f"tool: {call.name}")
            else:
                name, arg = mcp.activity_for(spec, request)  # run_tool, or an MCP server's
                result = await workflow.execute_activity(
                    name, arg, result_type=ToolResult, task_queue=spec.task_queue,
                    start_to_close_timeout=timeout, retry_policy=retry, summary=f"tool: {call.name}")
        except (ActivityError, ApplicationError, TemporalTimeout) as err:  # a local activity's comes unwrapped
            result = ToolResult(is_error=True, content=tool_failure_message(spec, err))
        finally:
            self.in_flight -= 1
        return result

    async def _after(self, agent: str, call: ToolCall, result: ToolResult) -> ToolResult:
        """A breakpoint after the call ran: the result the model sees (a person may edit it),
        and, when they stop the run, why (kept for answering.py, which ends the run)."""
        self.in_flight += 1  # no continue-as-new meanwhile: the result is in no carried state yet
        try:
            result, stopped = await self.breaks.after_tool(agent, call, result)
        finally:
            self.in_flight -= 1
        if stopped is not None:
            self.stopped[call.id] = stopped
        return result
