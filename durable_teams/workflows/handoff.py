"""Handoff conventions, as langgraph-supervisor writes them, so transcripts look familiar.

Pure functions: names of handoff tools, their schemas, the exact messages they leave in the
transcript, and what an agent's view shows of them. No Temporal imports; unit-tested in
milliseconds.
"""

from __future__ import annotations

import re
from typing import Literal

from .messages import Message, ToolCall, ToolSpec

HandoffView = Literal["none", "own", "all"]
"""What a worker is shown of the handoffs in the shared conversation before its run:
"own": only the handoff call that engaged it (the default: a worker is never shown calls to
`transfer_*` tools it does not have, which weaker models imitate); "all": every handoff call and
hand-back pair, as langgraph-supervisor shows them with `add_handoff_messages=True`; "none": no
handoff messages at all, not even to the supervisor (`add_handoff_messages=False`)."""


def normalize_agent_name(name: str) -> str:
    """`Research Expert` -> `research_expert`: lowercased, whitespace to underscores."""
    return re.sub(r"\s+", "_", name.strip()).lower()


def handoff_tool_name(agent: str, prefix: str = "transfer_to_") -> str:
    """The supervisor's tool that hands work to `agent`.

    langgraph-supervisor concatenates prefix and name without a separator, so its documented
    `handoff_tool_prefix="delegate_to"` yields `delegate_toresearch_expert`. We add the missing
    underscore when the prefix does not end with one.
    """
    if prefix and not prefix.endswith("_"):
        prefix += "_"
    return f"{prefix}{normalize_agent_name(agent)}"


def handoff_back_tool_name(supervisor: str) -> str:
    return f"transfer_back_to_{normalize_agent_name(supervisor)}"


def handoff_tool_spec(agent: str, prefix: str = "transfer_to_", description: str = "") -> ToolSpec:
    """Schema of a handoff tool: no parameters, langgraph-supervisor's description."""
    return ToolSpec(
        name=handoff_tool_name(agent, prefix),
        description=description or f"Ask agent '{agent}' for help",
    )


def handoff_message(agent: str, call: ToolCall) -> Message:
    """The tool message that answers a handoff call."""
    return Message(
        role="tool",
        content=f"Successfully transferred to {agent}",
        name=call.name,
        tool_call_id=call.id,
        kind="handoff",
    )


def handoff_back_messages(agent: str, supervisor: str, call_id: str) -> list[Message]:
    """The pair a worker leaves when control returns to the supervisor."""
    tool = handoff_back_tool_name(supervisor)
    return [
        Message(
            role="assistant",
            content=f"Transferring back to {supervisor}",
            name=agent,
            tool_calls=[ToolCall(id=call_id, name=tool, arguments="{}")],
            kind="handoff_back",
        ),
        Message(
            role="tool",
            content=f"Successfully transferred back to {supervisor}",
            name=tool,
            tool_call_id=call_id,
            kind="handoff_back",
        ),
    ]


# ---- what a view shows of handoffs ----------------------------------------------------------


def handoff_call_ids(messages: list[Message]) -> set[str]:
    """Ids of tool calls that are handoff artifacts (answered by a handoff tool message)."""
    return {
        m.tool_call_id
        for m in messages
        if m.role == "tool" and m.kind in ("handoff", "handoff_back") and m.tool_call_id
    }


def strip_siblings(messages: list[Message], keep_call_id: str | None) -> list[Message]:
    """Every handoff stays, except the calls made beside the one that started this run (a
    parallel handoff): the worker sees the supervisor's message filtered to its own call."""
    siblings = _siblings(messages, keep_call_id)
    return _drop_calls(messages, siblings) if siblings else messages


def _siblings(messages: list[Message], keep_call_id: str | None) -> set[str]:
    if keep_call_id is not None:
        for m in messages:
            if any(c.id == keep_call_id for c in m.tool_calls):
                return {c.id for c in m.tool_calls if c.id != keep_call_id}
    return set()


def strip_foreign_handoffs(messages: list[Message], keep_call_id: str | None) -> list[Message]:
    """Remove handoff calls and their tool messages, except the one that started this run.

    An assistant message left with neither text nor calls is dropped. Tool messages that answer
    a call dropped this way are dropped too, so the view stays valid Chat Completions input.
    When the kept handoff came with sibling calls (parallel handoff, or a handoff mixed with a
    tool call), the worker sees the supervisor's message filtered to its own call, as
    langgraph-supervisor does for parallel handoffs.
    """
    drop = (handoff_call_ids(messages) | _siblings(messages, keep_call_id)) - {keep_call_id}
    return _drop_calls(messages, drop)


def _drop_calls(messages: list[Message], drop: set[str]) -> list[Message]:
    """Messages without the calls in `drop` and their tool messages; an assistant message left
    with neither text nor calls (or a hand-back) is dropped."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool" and m.tool_call_id in drop:
            continue
        if m.tool_calls and any(c.id in drop for c in m.tool_calls):
            calls: list[ToolCall] = [c for c in m.tool_calls if c.id not in drop]
            if not calls and (not m.content or m.kind == "handoff_back"):
                continue
            m = m.model_copy(update={"tool_calls": calls})
        out.append(m)
    return out
