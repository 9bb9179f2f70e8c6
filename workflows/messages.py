"""Wire types: what travels through Temporal (workflow input, activity input/output, queries).

Messages follow the OpenAI Chat Completions shapes (`role`, `content`, `name`, `tool_calls`,
`tool_call_id`) as our own pydantic models, so a change in the openai SDK never changes history.
Everything here is plain data: no I/O, no clock, no randomness, safe inside the workflow sandbox.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


def wire_name(name: str) -> str:
    """A display name as a message `name` endpoints accept: whitespace becomes `_`."""
    return re.sub(r"\s+", "_", name.strip())


class Wire(BaseModel):
    """Base for wire types: unknown fields are an error, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid")


class Reply(Wire):
    """Base for what one side reads back from the other (workflow results, query results,
    activity results). Fields it does not know are ignored rather than refused, so a worker can
    be upgraded before its clients (or one worker before another) without breaking them:
    a newer side may add fields, never change what an existing one means."""

    model_config = ConfigDict(extra="ignore")


class ToolCall(Wire):
    """One function call requested by the model. `arguments` is the raw JSON string it sent."""

    id: str
    name: str
    arguments: str = "{}"


class Message(Wire):
    """One transcript message.

    `name` on an assistant message is the agent that wrote it; on a tool message, the tool.
    `scope` is workflow bookkeeping, never sent to the model: 0 is the shared conversation,
    k > 0 is the private working area of agent run k (its own tool loop).
    `kind` marks handoff artifacts so views can show or strip them.
    """

    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    scope: int = 0
    kind: Literal["message", "handoff", "handoff_back", "routing", "human", "error"] = "message"

    def to_openai(self) -> dict[str, Any]:
        """The Chat Completions dict for this message (our bookkeeping fields dropped)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            return out
        if self.name and self.role in ("user", "assistant"):
            out["name"] = wire_name(self.name)
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return out


class ToolSpec(Wire):
    """A tool as data: its schema for the model and how the workflow should run it."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    local: bool = False
    """Run as a local activity: for pure, fast functions (no extra history round trip)."""
    needs_approval: bool = False
    """Pause for a human's approval before running (swarm's execute_order/execute_refund)."""
    return_direct: bool = False
    """The tool's result is the agent's reply; no further model call."""
    context_params: list[str] = Field(default_factory=list)
    """Parameters filled from the conversation's context variables, hidden from the model."""
    timeout_seconds: float = 60.0
    max_attempts: int = 1
    """Runs at most once unless `idempotent`: a retry after a timeout could repeat a side
    effect the model was told failed."""
    idempotent: bool = False
    """Safe to run again (reads, or writes deduplicated by the idempotency key): only such a
    tool is retried, up to `max_attempts`."""
    retry_interval_seconds: float = 1.0
    task_queue: str | None = None

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class AgentSpec(Wire):
    """An agent as data. Tools and peers are named by string; callables live in the worker."""

    name: str
    instructions: str = ""
    """A string, or a template with `{date}`, `{datetime}`, `{agent_name}`, `{supervisor_name}`
    and `{context[key]}` placeholders, filled in the workflow at call time."""
    model: str = "gpt-4o-mini"
    description: str = ""
    tools: list[str] = Field(default_factory=list)
    handoffs: list[str] = Field(default_factory=list)
    """Peers this agent may hand the conversation to (swarm style)."""
    handoff_tool_names: dict[str, str] = Field(default_factory=dict)
    """Peer -> tool name, where it is not `transfer_to_<peer>` (the Swarm cookbook's
    `transfer_back_to_triage`)."""
    handoff_descriptions: dict[str, str] = Field(default_factory=dict)
    """Peer -> description of the handoff tool, where the peer's own `description` is not the
    right cue (the cookbook's "Call this if the user brings up a topic outside of your purview")."""
    output_schema: dict[str, Any] | None = None
    """JSON schema of a structured final answer (response_format json_schema)."""
    skills: list[str] = Field(default_factory=list)
    run_as_child: bool = False
    """Run this agent in a child workflow of its own (a one-agent team): for long or risky
    agents, whose steps then get their own history, ids and UI page."""
    temperature: float | None = None
    model_calls: ModelCalls | None = None
    """This agent's model-call timeouts and retries (None: the team's)."""
    team: TeamSpec | None = None
    """A nested team: this "agent" is a whole team (usually a supervisor with its own agents)
    that runs as a child workflow. The team travels here as data, so the child needs no
    lookup; `instructions`, `model` and `tools` of this spec are unused then."""


OutputMode = Literal["full_history", "last_message"]
Strategy = Literal["llm", "llm-decision", "rules", "skills", "round-robin", "load-balanced"]


class RoutingRule(Wire):
    """Route to `target` when the user's message contains one of `keywords` (case-insensitive,
    whole words or phrases; a plural in -s/-es matches too) or matches the regular expression
    `pattern` (searched case-insensitively). Rules are tried in order; the first match wins."""

    target: str
    keywords: list[str] = Field(default_factory=list)
    pattern: str | None = None


class RoutingDecision(Wire):
    """Which agent a routing strategy chose, and why: recorded in the transcript (a message
    with kind="routing") so every decision can be audited."""

    target: str
    strategy: Strategy
    reasoning: str = ""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


class SupervisorSpec(Wire):
    """The supervisor of a team, with langgraph-supervisor's options."""

    name: str = "supervisor"
    instructions: str = ""
    model: str = "gpt-4o-mini"
    agents: list[str]
    tools: list[str] = Field(default_factory=list)
    output_mode: OutputMode = "last_message"
    add_handoff_messages: bool = True
    add_handoff_back_messages: bool = True
    workers_see_handoffs: Literal["own", "all"] = "own"
    handoff_tool_prefix: str = "transfer_to_"
    parallel_tool_calls: bool = False
    max_parallel_handoffs: int = 8
    worker_preamble: bool = False
    """Prepend ABI's "you are a specialized agent working under <supervisor>" block to workers."""
    strategy: Strategy = "llm"
    """How the supervisor picks a worker: "llm" (the model calls handoff tools), "llm-decision"
    (the model answers with a JSON routing decision), or a strategy that calls no model:
    "rules", "skills", "round-robin", "load-balanced" (see workflows/routing.py)."""
    rules: list[RoutingRule] = Field(default_factory=list)
    """For strategy "rules": tried in order."""
    fallback_agent: str | None = None
    """Where "rules" and "skills" route when nothing matches (default: the first agent)."""
    decision_max_retries: int = Field(default=2, ge=0)
    """For "llm-decision": how many times an unusable decision is sent back to the model."""
    aggregate: str | None = None
    """How the answers of one reply's handoffs become the final answer. None (default): the
    supervisor's next model call reads them. "concatenate": joined in call order, no model call.
    Any other name: a tool of the team, called once with `results=[{"agent", "answer"}, ...]`
    in call order; what it returns is the answer (AgentForge's `aggregateFn`)."""
    decision_max_tool_rounds: int = Field(default=3, ge=0)
    """For "llm-decision": how many rounds of tool calls (ask_human, lookups) the supervisor
    may make before it must decide."""


class ModelCalls(Wire):
    """How long one model call may take and how often it is tried (per team, or per agent).

    The defaults surface a hung endpoint in about four minutes: each attempt may take
    `timeout_seconds`, at most `max_attempts` attempts are made (waiting `retry_interval_seconds`,
    doubling, between them), and all of them together, waits included, stop after
    `total_timeout_seconds`."""

    timeout_seconds: float = Field(default=90.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    total_timeout_seconds: float = Field(default=240.0, gt=0)
    retry_interval_seconds: float = Field(default=1.0, gt=0)


class Budgets(Wire):
    """Limits that end a runaway loop with a clear final message instead of a crash."""

    max_model_calls: int = 50
    """Per user turn."""
    max_handoffs: int = 20
    max_tool_calls: int = 100


class TeamSpec(Wire):
    """A whole team as data: travels as workflow input, so a running conversation never depends
    on code that changed since it started."""

    name: str = "team"
    supervisor: SupervisorSpec | None = None
    """None means a swarm: agents hand the conversation to each other as peers."""
    agents: dict[str, AgentSpec]
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    start_agent: str | None = None
    """For a swarm: the agent that takes the first turn."""
    budgets: Budgets = Field(default_factory=Budgets)
    ask_human_timeout_seconds: float = 86_400.0
    ask_human_default: str | None = None
    """What an unanswered question resolves to; None gives the model a clear "no answer"."""
    model_calls: ModelCalls = Field(default_factory=ModelCalls)
    """Timeouts and retries of model calls; an agent's own `model_calls` replaces them."""
    model_timeout_seconds: float | None = None
    """Superseded by `model_calls`; kept so recorded conversations still read. When set, it is
    the per-attempt timeout."""
    continue_as_new_after_events: int = 10_000
    """Continue as new once the run's history has this many events (or when Temporal suggests
    it), between turns or while waiting for a person; the conversation goes on unnoticed."""
    continue_as_new_after_bytes: int = 10 * 1024 * 1024


AgentSpec.model_rebuild()  # `team: TeamSpec` is a forward reference


class ModelRequest(Wire):
    """Input of the `call_model` activity: a *reference* to the transcript, not the transcript.

    The activity reads the agent's view from the workflow (directly when the workflow is cached
    in its process, see workflows/live_view.py; else with a query), so each message enters
    the history once (the model's reply as this activity's result, a tool's output as the tool
    activity's result, a user turn as its update or signal) and history grows linearly.
    """

    workflow_id: str
    run_id: str
    agent: str
    model: str
    view_id: int
    """Which agent run's view to read (0 = the shared conversation as the supervisor sees it)."""
    transcript_length: int
    """Log length when scheduled: the view is read as of this point, so a retry sees the same."""
    shared_length: int | None = None
    """Length of the shared conversation's index when scheduled (see workflows/live_view.py)."""
    instructions: str = ""
    tool_names: list[str] = Field(default_factory=list)
    parallel_tool_calls: bool | None = None
    output_schema: dict[str, Any] | None = None
    temperature: float | None = None
    agent_call_index: int = 0
    """How many model calls this agent made earlier in the conversation: deterministic, so a
    scripted model replays the same reply after a retry or a worker restart."""


class ModelView(Reply):
    """What the `model_view` query returns: the system prompt, messages and tool schemas."""

    messages: list[Message]
    tools: list[ToolSpec]


class Usage(Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelResponse(Reply):
    """Output of `call_model`: one assistant message, stamped with the agent's name."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


class ToolRequest(Wire):
    """Input of `run_tool`. The idempotency key (workflow id, the message's index and the
    call's position in it, tool call id) is the same for every retry of one call and differs
    between calls, even two calls a model gave the same id."""

    tool: str
    arguments: str
    tool_call_id: str
    idempotency_key: str
    agent: str
    context: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float | None = None
    """The tool's own deadline, enforced on the worker (the coroutine is cancelled), so a tool
    never goes on after the workflow was told it timed out. None: only Temporal's timeout."""


class ToolResult(Reply):
    """A tool's outcome as data: an error the model should see is recorded once, not retried."""

    content: str
    is_error: bool = False
    context_updates: dict[str, Any] = Field(default_factory=dict)
    handoff_to: str | None = None
    """A tool may return an agent to hand the conversation to (swarm's `return agent`)."""
