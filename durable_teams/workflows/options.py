"""The options of agents and supervisors, declared and documented once. Pure data.

The builders users write (`durable_teams.Agent`, `durable_teams.Supervisor`) and the wire types
the workflow reads (`AgentSpec`, `SupervisorSpec`) both inherit these dataclasses, so an option
is one field here: its type, default and docstring (what an editor shows on the builder), and
`compile()` copies every one of them into the spec by name. Fields whose type differs between
builder and spec (a tool as a function or a name, an agent as an object or a name) are declared
on each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .intents import Intent, IntentSimilarity

OutputMode = Literal["full_history", "last_message"]
ModelApi = Literal["chat_completions", "responses"]
Strategy = Literal["llm", "llm-decision", "rules", "skills", "round-robin", "load-balanced"]


class RoutingRule(BaseModel):
    """Route to `target` when the user's message contains one of `keywords` (case-insensitive,
    whole words or phrases; a plural in -s/-es matches too) or matches the regular expression
    `pattern` (searched case-insensitively). Rules are tried in order; the first match wins."""

    model_config = ConfigDict(extra="forbid")  # as every wire type (messages.Wire)

    target: str
    keywords: list[str] = Field(default_factory=list)
    pattern: str | None = None


class ModelCalls(BaseModel):
    """How long one model call may take and how often it is tried (per team, or per agent).

    The defaults surface a hung endpoint in about four minutes: each attempt may take
    `timeout_seconds`, at most `max_attempts` attempts are made (waiting `retry_interval_seconds`,
    doubling, between them), and all of them together, waits included, stop after
    `total_timeout_seconds`."""

    model_config = ConfigDict(extra="forbid")  # as every wire type (messages.Wire)

    timeout_seconds: float = Field(default=90.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    total_timeout_seconds: float = Field(default=240.0, gt=0)
    retry_interval_seconds: float = Field(default=1.0, gt=0)
    local: bool = False
    """True: run each call as a local activity, in the worker that holds the conversation (its
    view read in process, a marker in history instead of three activity events; with local
    tools, 2.4x the floor's calls per second at 500 conversations, docs/performance.md). While
    a local call runs, the conversation's workflow task stays open (start conversations with
    `start_conversation`: its 30 s task timeout leaves a busy worker room to heartbeat it):
    queries and updates wait for it (the gateway's step events too), so it is opt-in. False: a regular
    activity, placed on the worker's own queue (workflows/placement.py). See
    docs/deployment.md, "Model calls as local activities"."""
    worker_queue_seconds: float = Field(default=10.0, gt=0)
    """Regular activities only: how long a call waits for the worker holding the conversation
    to take it (on that worker's own task queue) before it runs on the shared queue instead
    (workflows/placement.py)."""


@dataclass(kw_only=True)
class AgentOptions:
    description: str = ""
    """What the agent does: shown to a supervisor choosing it (llm-decision), to peers as its
    handoff tool's description, and by `list_agents`."""
    skills: list[str] = field(default_factory=list)
    """For the "skills" strategy: the agent whose skills the message names most is chosen."""
    run_as_child: bool = False
    """Run this agent in a child workflow of its own (a one-agent team): for long or risky
    agents, whose steps then get their own history, ids and UI page."""
    temperature: float | None = None
    """Sampling temperature for this agent's model calls (None: the model's default)."""
    model_calls: ModelCalls | None = None
    """This agent's model-call timeouts and retries (None: the team's)."""
    intents: Annotated[list[Intent], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """ABI's intents: phrases answered without a model call (workflows/intents.py), matched
    when the person's message would reach this agent first (docs/intents.md)."""
    api: Annotated[ModelApi | None, Field(exclude_if=lambda v: v is None)] = None
    """Which OpenAI API this agent's model calls use: "chat_completions" (None: the team's,
    else Chat Completions) or "responses" (`/v1/responses`, for models served only there)."""
    interrupt_before: Annotated[list[str], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """Breakpoints of this agent: pause before its own tools run (their names, or "tools"), and
    before it runs ("agent", or its own name). See docs/time-travel.md."""
    interrupt_after: Annotated[list[str], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """Likewise after its tools ran (their names, or "tools"), and after its reply ("agent")."""


@dataclass(kw_only=True)
class SupervisorOptions:
    output_mode: OutputMode = "last_message"
    """What of a worker's run the shared conversation keeps: "last_message" (its final answer)
    or "full_history" (every step, its tool calls included), as in langgraph-supervisor."""
    add_handoff_messages: bool = True
    """Whether handoff calls and their tool messages are shown to agents (they always stay in
    the log): langgraph-supervisor's option of the same name."""
    workers_see_handoffs: Literal["own", "all"] = "own"
    """What a worker is shown of the handoffs before its run (with `add_handoff_messages`).
    "own": only the call that engaged it; a worker is never shown calls to `transfer_*` tools
    it does not have, which weaker models imitate (and then get an error listing their tools).
    "all": langgraph-supervisor's view: every earlier handoff call and hand-back pair, so the
    requests match langgraph-supervisor's message for message, at the cost of showing workers
    calls they cannot make."""
    handoff_tool_prefix: str = "transfer_to_"
    """Handoff tools are named `<prefix><agent>` (an underscore is added if missing)."""
    parallel_tool_calls: bool = False
    """Let the supervisor hand off to several agents in one reply: they run concurrently, each
    on its own view, and their answers come back in call order."""
    max_parallel_handoffs: int = 8
    """With `parallel_tool_calls`: at most this many agents per reply; extra handoffs are
    answered with a tool message saying why."""
    worker_preamble: bool = False
    """Prefix each worker's instructions with ABI's "you are a specialized agent working under
    <supervisor>" block, and give workers `request_help(reason)` to hand the turn back."""
    strategy: Strategy = "llm"
    """How work is routed: "llm" (the model calls handoff tools), "llm-decision" (the model
    answers with a JSON routing decision), or a strategy that calls no model: "rules",
    "skills", "round-robin", "load-balanced" (see workflows/routing.py)."""
    rules: list[RoutingRule] = field(default_factory=list)
    """For "rules": `RoutingRule(target="billing", keywords=["refund"])`, tried in order; the
    first match wins, else `fallback_agent`."""
    decision_max_retries: Annotated[int, Field(ge=0)] = 2
    """For "llm-decision": how many times an unusable decision (not JSON, no agent of the team)
    is sent back to the model with the reason before the turn fails with a message."""
    decision_max_tool_rounds: Annotated[int, Field(ge=0)] = 3
    """For "llm-decision": how many rounds of tool calls (ask_human, lookups) the supervisor
    may make before it must decide."""


class Budgets(BaseModel):
    """Limits that end a runaway loop with a clear final message instead of a crash."""

    model_config = ConfigDict(extra="forbid")  # as every wire type (messages.Wire)

    max_model_calls: int = 50
    """Per user turn."""
    max_handoffs: int = 20
    """Per user turn."""
    max_tool_calls: int = 100
    """Per user turn."""
    max_tokens_per_turn: int | None = None
    """Input + output tokens of every model call in one user turn (nested teams included)."""
    max_tokens_per_conversation: int | None = None


@dataclass(kw_only=True)
class TeamOptions:
    budgets: Budgets = field(default_factory=Budgets)
    """`Budgets(max_model_calls=..., max_handoffs=..., max_tool_calls=...)`: per user turn."""
    ask_human_timeout_seconds: float = 86_400.0
    """How long a question to a person (`ask_human`, an approval) waits before it resolves to
    `ask_human_default` (default: one day)."""
    ask_human_default: str | None = None
    """What an unanswered question resolves to; None gives the model a clear "no answer"."""
    model_calls: ModelCalls = field(default_factory=ModelCalls)
    """Timeouts and retries of every model call (see `ModelCalls`; an agent may override)."""
    continue_as_new_after_events: int = 10_000
    """Continue as new once the run's history has this many events (or when Temporal suggests
    it), between turns or while waiting for a person; the conversation goes on unnoticed."""
    continue_as_new_after_bytes: int = 10 * 1024 * 1024
    """Likewise once the run's history has this many bytes (Temporal's limit is 50 MB)."""
    intents: Annotated[list[Intent], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """ABI's intents for the whole team: phrases mapped to an answer, a tool call or an agent,
    matched against the person's message before any model call (docs/intents.md)."""
    intent_similarity: Annotated[IntentSimilarity | None, Field(exclude_if=lambda v: v is None)] = None
    """Match intents by meaning too, through an embeddings endpoint (None: exact matches only)."""
    api: Annotated[ModelApi | None, Field(exclude_if=lambda v: v is None)] = None
    """Which OpenAI API the team's model calls use (an agent may say otherwise): None or
    "chat_completions" (`/v1/chat/completions`), or "responses" (`/v1/responses`)."""
    interrupt_before: Annotated[list[str], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """Breakpoints: pause before these steps, as a question a person answers (resume, resume
    with edited arguments, or stop): tool names, "tools" for every tool, or agent names (before
    the agent runs). See docs/time-travel.md."""
    interrupt_after: Annotated[list[str], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """Breakpoints after these steps: tool names or "tools" (after the tool ran, before the
    model sees its result, which the person may edit), or agent names (after the agent's reply,
    before routing goes on)."""


def option_values(options: object, of: type) -> dict[str, Any]:
    """The values of the options dataclass `of` that `options` (a builder) holds, by name."""
    return {f.name: getattr(options, f.name) for f in fields(of)}
