"""Handoff conventions, as langgraph-supervisor writes them, so transcripts look familiar.

Pure functions: names of handoff tools, their schemas, and the exact messages they leave in the
transcript. No Temporal imports; unit-tested in milliseconds.
"""

from __future__ import annotations

import re

from .messages import Message, ToolCall, ToolSpec


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
