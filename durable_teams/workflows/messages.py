"""Wire types: what travels through Temporal (workflow input, activity input/output, queries).

Messages follow the OpenAI Chat Completions shapes (`role`, `content`, `name`, `tool_calls`,
`tool_call_id`) as our own pydantic models, so a change in the openai SDK never changes history.
Everything here is plain data: no I/O, no clock, no randomness, safe inside the workflow sandbox.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Literal

from pydantic import Field
from pydantic.dataclasses import dataclass as wire_dataclass
from pydantic.dataclasses import rebuild_dataclass

from .options import AgentOptions, SupervisorOptions, TeamOptions
from .options import Budgets as Budgets
from .options import ModelCalls as ModelCalls
from .options import OutputMode as OutputMode  # re-exported: wire types' home
from .options import RoutingRule as RoutingRule
from .options import Strategy as Strategy
from .wire_base import WIRE_CONFIG, Reply, Wire, agent_run_field, left_out_when_unset, optional_cap

Role = Literal["system", "user", "assistant", "tool"]


def wire_name(name: str) -> str:
    """A display name as a message `name` endpoints accept: whitespace becomes `_`."""
    return re.sub(r"\s+", "_", name.strip())


class ToolCall(Wire):
    """One function call requested by the model. `arguments` is the raw JSON string it sent."""

    id: str
    name: str
    arguments: str = "{}"


class Usage(Wire):
    """Tokens one model call used, as the API reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class Message(Wire):
    """One transcript message.

    `name` on an assistant message is the agent that wrote it; on a tool message, the tool.
    `agent_run` is workflow bookkeeping, never sent to the model: 0 is the shared conversation,
    k > 0 is the private working area of agent run k (`AgentRun.id`; its own tool loop).
    `kind` marks handoff artifacts so views can show or strip them; "notice" marks a note for
    people (a refused signal, say), which no model is shown.
    """

    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    usage: Usage | None = None
    """On a model's reply: the tokens that call used (bookkeeping, never sent to the model)."""
    agent_run: int = agent_run_field(wire_name="scope", default=0)
    reasoning: list[dict[str, Any]] | None = left_out_when_unset()
    """On a reply through the Responses API: the model's reasoning items (encrypted), passed back
    with the conversation's later calls (activities/model_responses.py); never sent to Chat
    Completions."""
    kind: Literal["message", "handoff", "handoff_back", "routing", "human", "error", "notice"] = "message"
    custom: list[Any] | None = left_out_when_unset()
    """On a tool's message: what it wrote with `get_stream_writer()` (never sent to a model)."""


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
    mcp_server: str | None = None
    """Set for a tool an MCP server offers: the server's name (workflows/mcp_tools.py)."""
    mcp_tool: str | None = None
    """The tool's name on that server (`name` may carry the server's `tool_prefix`)."""
    interrupt_before: bool = Field(default=False, exclude_if=lambda value: not value)
    """A breakpoint before every call of this tool (workflows/breakpoints.py)."""
    interrupt_after: bool = Field(default=False, exclude_if=lambda value: not value)
    """A breakpoint after every call of this tool, before the model sees its result."""


class MCPServerSpec(Wire):
    """An MCP server an agent takes tools from, as data: its name and options only. How to
    reach it (command, URL, headers) stays on the worker (durable_teams/teams/mcp_servers.py)."""

    name: str
    tool_prefix: str = ""
    allowed_tools: list[str] | None = None
    """Only these of the server's tools (None: all it lists)."""
    needs_approval: bool | list[str] = False
    """True: every tool of the server waits for a person's approval; a list: those tools."""
    timeout_seconds: float = 60.0
    max_attempts: int = 5
    """Attempts to reach the server (and, for an idempotent server, to run a call)."""
    idempotent: bool = False
    """Its tools are safe to run twice: a call that failed after it was sent is retried."""
    retry_interval_seconds: float = 1.0
    listed: list[ToolSpec] | None = None
    """The server's tools as listed once for this conversation, recorded in workflow state
    (continue-as-new carries it), so replay never asks the server again."""


@wire_dataclass(config=WIRE_CONFIG, kw_only=True)
class AgentSpec(AgentOptions):
    """An agent as data. Tools and peers are named by string; callables live in the worker.
    Its options (description, skills, ...) are documented once, in `options.AgentOptions`."""

    name: str
    instructions: str = ""
    """A string, or a template with `{date}`, `{datetime}`, `{agent_name}`, `{supervisor_name}`
    and `{context[key]}` placeholders, filled in the workflow at call time."""
    model: str = "gpt-4o-mini"
    tools: list[str] = field(default_factory=list)
    handoffs: list[str] = field(default_factory=list)
    """Peers this agent may hand the conversation to (swarm style)."""
    handoff_tool_names: dict[str, str] = field(default_factory=dict)
    """Peer -> tool name, where it is not `transfer_to_<peer>` (the Swarm cookbook's
    `transfer_back_to_triage`)."""
    handoff_descriptions: dict[str, str] = field(default_factory=dict)
    """Peer -> description of the handoff tool, where the peer's own `description` is not the
    right cue (the cookbook's "Call this if the user brings up a topic outside of your purview")."""
    output_schema: dict[str, Any] | None = None
    """JSON schema of a structured final answer (response_format json_schema)."""
    mcp: list[MCPServerSpec] = field(default_factory=list)
    """MCP servers whose tools this agent may use (listed once per conversation)."""
    team: TeamSpec | None = None
    """A nested team: this "agent" is a whole team (usually a supervisor with its own agents)
    that runs as a child workflow. The team travels here as data, so the child needs no
    lookup; `instructions`, `model` and `tools` of this spec are unused then."""


class RoutingDecision(Wire):
    """Which agent a routing strategy chose, and why: recorded in the transcript (a message
    with kind="routing") so every decision can be audited."""

    target: str
    strategy: Strategy
    reasoning: str = ""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


@wire_dataclass(config=WIRE_CONFIG, kw_only=True)
class SupervisorSpec(SupervisorOptions):
    """The supervisor of a team. Its options (langgraph-supervisor's and the routing ones) are
    documented once, in `options.SupervisorOptions`; the fields below are resolved to names."""

    name: str = "supervisor"
    instructions: str = ""
    model: str = "gpt-4o-mini"
    agents: list[str]
    tools: list[str] = field(default_factory=list)
    add_handoff_back_messages: bool = True
    fallback_agent: str | None = None
    """Where "rules" and "skills" route when nothing matches (default: the first agent)."""
    aggregate: str | None = None
    """How the answers of one reply's handoffs become the final answer. None (default): the
    supervisor's next model call reads them. "concatenate": joined in call order, no model call.
    Any other name: a tool of the team, called once with `results=[{"agent", "answer"}, ...]`
    in call order; what it returns is the answer (AgentForge's `aggregateFn`)."""


@wire_dataclass(config=WIRE_CONFIG, kw_only=True)
class TeamSpec(TeamOptions):
    """A whole team as data: travels as workflow input, so a running conversation never depends
    on code that changed since it started. Its options (budgets, model calls, ...) are
    documented once, in `options.TeamOptions`, which the builders inherit too."""

    name: str = "team"
    supervisor: SupervisorSpec | None = None
    """None means a swarm: agents hand the conversation to each other as peers."""
    agents: dict[str, AgentSpec]
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    start_agent: str | None = None
    """For a swarm: the agent that takes the first turn."""


rebuild_dataclass(AgentSpec)  # type: ignore[arg-type]  # `team: TeamSpec` is a forward reference
rebuild_dataclass(TeamSpec)  # type: ignore[arg-type]


class ModelRequest(Wire):
    """Input of the `call_model` activity: a *reference* to the transcript, not the transcript.

    The activity reads the agent's view from the workflow (directly when the workflow is cached
    in its process, see workflows/offered_views.py; else with a query), so each message enters
    the history once (the model's reply as this activity's result, a tool's output as the tool
    activity's result, a user turn as its update or signal) and history grows linearly.
    """

    workflow_id: str
    run_id: str
    agent: str
    model: str
    agent_run: int = agent_run_field(wire_name="view_id")
    """Which agent run's view to read (0 = the shared conversation as the supervisor sees it)."""
    transcript_length: int
    """Log length when scheduled: the view is read as of this point, so a retry sees the same."""
    instructions: str = ""
    tool_names: list[str] = Field(default_factory=list)
    parallel_tool_calls: bool | None = None
    output_schema: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = optional_cap()
    """The most tokens the reply may have (a chat client's `max_tokens` for its turn)."""
    api: Literal["responses"] | None = left_out_when_unset()
    """"responses": the call goes to `/v1/responses` (activities/model_responses.py); None:
    Chat Completions. Set only for agents that declare it, so other requests read as before."""
    agent_call_index: int = 0
    """How many model calls this agent made earlier in the conversation: deterministic, so a
    scripted model replays the same reply after a retry or a worker restart."""
    team: str | None = left_out_when_unset()
    """The team whose agent asks (a nested team's own name), so a scripted model answers each
    team from its own script. None in requests recorded before it was sent."""


class ModelView(Reply):
    """What the `model_view` query returns: the system prompt, messages and tool schemas."""

    messages: list[Message]
    tools: list[ToolSpec]
    in_process: bool = False
    """Offered by the workflow instance in this process (workflows/offered_views.py), not a query."""


class ModelResponse(Reply):
    """Output of `call_model`: one assistant message, stamped with the agent's name."""

    message: Message
    finish_reason: str | None = None
    """As the endpoint reported it ("stop", "tool_calls", "length", "content_filter", ...): an
    answer cut off by "length" or "content_filter" makes the turn's status "truncated" or
    "filtered" (workflows/state.py `flagged`), never a silent "completed"."""
    usage: Usage = Field(default_factory=Usage)
    read_in_process: bool | None = None
    """Whether the view was read in the process holding the workflow (None: not reported);
    tells the workflow where to schedule its next call (workflows/placement.py)."""
    tools_unavailable: str | None = left_out_when_unset()
    """Set when the endpoint refused the agent's tools (a model without tool calling): the call
    was made again without them, and this is the server's reason (activities/model_toolless.py)."""


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
    team: str | None = left_out_when_unset()
    """The team whose tool this is (a nested team's own name): two teams on one worker may each
    have a tool of one name. None in requests recorded before it was sent."""
    tenant: str | None = left_out_when_unset()
    """The conversation's tenant (workflows/tenancy.py), sent with every call so a cached result
    never crosses tenants; None for a conversation of no tenant."""


class ToolResult(Reply):
    """A tool's outcome as data: an error the model should see is recorded once, not retried."""

    content: str
    is_error: bool = False
    context_updates: dict[str, Any] = Field(default_factory=dict)
    handoff_to: str | None = None
    """A tool may return an agent to hand the conversation to (swarm's `return agent`)."""
    custom: list[Any] | None = left_out_when_unset()
    """What the tool wrote with `get_stream_writer()` (None: nothing, or recorded before it)."""
