"""durable-teams: multi-agent supervisor and swarm teams that run durably on Temporal.

Everything an application needs is importable from here::

    from durable_teams import Agent, Supervisor, tool, connect, start_conversation, send_turn

Names are resolved on first use, so importing the package stays cheap (the CLI starts fast, and
Temporal's workflow sandbox, which re-imports this module for every conversation, loads nothing
it does not need).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it: the one list of the public API (`__all__` is its keys;
# the TYPE_CHECKING imports below repeat it for type checkers, and a test keeps them equal)
_EXPORTS: dict[str, str] = {
    # defining teams
    "Agent": "durable_teams.teams.builders",
    "Supervisor": "durable_teams.teams.builders",
    "Swarm": "durable_teams.teams.builders",
    "handoff": "durable_teams.teams.builders",
    "CompiledTeam": "durable_teams.teams.builders",
    "TeamError": "durable_teams.workflows.definition_checks",
    "tool": "durable_teams.teams.tools",
    "Result": "durable_teams.activities.tool_results",
    "RetryableToolError": "durable_teams.teams.tools",
    "current_idempotency_key": "durable_teams.teams.tools",
    "RoutingRule": "durable_teams.workflows.options",
    "Budgets": "durable_teams.workflows.options",
    "ModelCalls": "durable_teams.workflows.options",
    "MCPStdio": "durable_teams.teams.mcp_servers",
    "MCPHttp": "durable_teams.teams.mcp_servers",
    "team_graph": "durable_teams.teams.graph",
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
    "connect": "durable_teams.client.connection",
    "start_conversation": "durable_teams.client.start",
    "TASK_QUEUE": "durable_teams.client.connection",
    "send_turn": "durable_teams.client.send",
    "send_reply": "durable_teams.client.send",
    "ConversationEnded": "durable_teams.client.refusals",
    "ConversationNotFound": "durable_teams.client.refusals",
    "ConversationBusy": "durable_teams.client.refusals",
    "ReplyRejected": "durable_teams.client.refusals",
    "follow": "durable_teams.client.events",
    "EncryptionCodec": "durable_teams.encryption.codec",
    "EncryptionKeyError": "durable_teams.encryption.codec",
    "Event": "durable_teams.client.events",
    # serving teams
    "build_worker": "durable_teams.worker.build",
    "ModelBackend": "durable_teams.activities.model",
    "ModelRouter": "durable_teams.activities.model_router",
    "OpenAIBackend": "durable_teams.activities.model",
    "ScriptedModel": "durable_teams.worker.scripted",
}

__all__ = sorted(_EXPORTS)


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
    from durable_teams.activities.tool_results import Result
    from durable_teams.client.connection import TASK_QUEUE, connect
    from durable_teams.client.events import Event, follow
    from durable_teams.client.refusals import (
        ConversationBusy,
        ConversationEnded,
        ConversationNotFound,
        ReplyRejected,
    )
    from durable_teams.client.send import send_reply, send_turn
    from durable_teams.client.start import start_conversation
    from durable_teams.encryption.codec import EncryptionCodec, EncryptionKeyError
    from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor, Swarm, handoff
    from durable_teams.teams.graph import team_graph
    from durable_teams.teams.mcp_servers import MCPHttp, MCPStdio
    from durable_teams.teams.tools import RetryableToolError, current_idempotency_key, tool
    from durable_teams.worker.build import build_worker
    from durable_teams.worker.scripted import ScriptedModel
    from durable_teams.workflows.conversation import TeamWorkflow
    from durable_teams.workflows.definition_checks import TeamError
    from durable_teams.workflows.messages import Message
    from durable_teams.workflows.options import Budgets, ModelCalls, RoutingRule
    from durable_teams.workflows.state import (
        ConversationInput,
        ConversationResult,
        ConversationStatus,
        HumanReply,
        Question,
        TurnReply,
        UserTurn,
    )
