"""durable-teams: multi-agent supervisor and swarm teams that run durably on Temporal.

Everything an application needs is importable from here::

    from durable_teams import Agent, Supervisor, tool, connect, send_turn

Names are resolved on first use, so importing the package stays cheap (the CLI starts fast, and
Temporal's workflow sandbox, which re-imports this module for every conversation, loads nothing
it does not need).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it (one place for each concept)
_EXPORTS: dict[str, str] = {
    # defining teams
    "Agent": "durable_teams.builders",
    "Supervisor": "durable_teams.builders",
    "Swarm": "durable_teams.builders",
    "handoff": "durable_teams.builders",
    "CompiledTeam": "durable_teams.builders",
    "TeamError": "durable_teams.workflows.roster",
    "tool": "durable_teams.activities.tools",
    "Result": "durable_teams.activities.tools",
    "RetryableToolError": "durable_teams.activities.tools",
    "current_idempotency_key": "durable_teams.activities.tools",
    "RoutingRule": "durable_teams.workflows.options",
    "Budgets": "durable_teams.workflows.options",
    "ModelCalls": "durable_teams.workflows.options",
    "MCPStdio": "durable_teams.mcp",
    "MCPHttp": "durable_teams.mcp",
    "team_graph": "durable_teams.graph",
    # the workflow and its wire types
    "TeamWorkflow": "durable_teams.workflows.conversation",
    "ConversationInput": "durable_teams.workflows.state",
    "ConversationResult": "durable_teams.workflows.state",
    "ConversationStatus": "durable_teams.workflows.state",
    "UserTurn": "durable_teams.workflows.state",
    "TurnReply": "durable_teams.workflows.state",
    "HumanReply": "durable_teams.workflows.state",
    "Question": "durable_teams.workflows.state",
    "Message": "durable_teams.workflows.messages",
    # talking to conversations
    "connect": "durable_teams.runtime",
    "TASK_QUEUE": "durable_teams.runtime",
    "send_turn": "durable_teams.client",
    "send_reply": "durable_teams.client",
    "ConversationEnded": "durable_teams.client",
    "ConversationNotFound": "durable_teams.client",
    "ConversationBusy": "durable_teams.client",
    "ReplyRejected": "durable_teams.client",
    "follow": "durable_teams.events",
    "EncryptionCodec": "durable_teams.codec",
    "EncryptionKeyError": "durable_teams.codec",
    "Event": "durable_teams.events",
    # serving teams
    "build_worker": "durable_teams.runtime",
    "ModelBackend": "durable_teams.activities.model",
    "ModelRouter": "durable_teams.activities.model_router",
    "OpenAIBackend": "durable_teams.activities.model",
    "ScriptedModel": "durable_teams.scripted",
}

__all__ = [
    "Agent",
    "Budgets",
    "CompiledTeam",
    "ConversationBusy",
    "ConversationEnded",
    "ConversationInput",
    "ConversationNotFound",
    "ConversationResult",
    "ConversationStatus",
    "EncryptionCodec",
    "EncryptionKeyError",
    "Event",
    "HumanReply",
    "MCPHttp",
    "MCPStdio",
    "Message",
    "ModelBackend",
    "ModelCalls",
    "ModelRouter",
    "OpenAIBackend",
    "Question",
    "ReplyRejected",
    "Result",
    "RetryableToolError",
    "RoutingRule",
    "ScriptedModel",
    "Supervisor",
    "Swarm",
    "TASK_QUEUE",
    "TeamError",
    "TeamWorkflow",
    "TurnReply",
    "UserTurn",
    "build_worker",
    "connect",
    "current_idempotency_key",
    "follow",
    "handoff",
    "send_reply",
    "send_turn",
    "team_graph",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'durable_teams' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and editors see
    from durable_teams.activities.model import ModelBackend, OpenAIBackend
    from durable_teams.activities.model_router import ModelRouter
    from durable_teams.activities.tools import (
        Result,
        RetryableToolError,
        current_idempotency_key,
        tool,
    )
    from durable_teams.builders import Agent, CompiledTeam, Supervisor, Swarm, handoff
    from durable_teams.client import (
        ConversationBusy,
        ConversationEnded,
        ConversationNotFound,
        ReplyRejected,
        send_reply,
        send_turn,
    )
    from durable_teams.codec import EncryptionCodec, EncryptionKeyError
    from durable_teams.events import Event, follow
    from durable_teams.graph import team_graph
    from durable_teams.mcp import MCPHttp, MCPStdio
    from durable_teams.runtime import TASK_QUEUE, build_worker, connect
    from durable_teams.scripted import ScriptedModel
    from durable_teams.workflows.conversation import TeamWorkflow
    from durable_teams.workflows.messages import Message
    from durable_teams.workflows.options import Budgets, ModelCalls, RoutingRule
    from durable_teams.workflows.roster import TeamError
    from durable_teams.workflows.state import (
        ConversationInput,
        ConversationResult,
        ConversationStatus,
        HumanReply,
        Question,
        TurnReply,
        UserTurn,
    )
