"""durable-teams: multi-agent supervisor and swarm teams that run durably on Temporal.

What a team author and a client need is importable from here::

    from durable_teams import Agent, Supervisor, tool, connect, start_conversation, send_turn

The rest is in documented submodules: `durable_teams.teams` (team options, MCP servers, the
graph), `durable_teams.client` (replies, events, refusals), `durable_teams.worker` (model
backends), `durable_teams.encryption`, and the wire types in `durable_teams.workflows.state`
and `durable_teams.workflows.messages` (see docs/architecture.md). Names are imported on first
use (here and in those submodules), so importing the package stays cheap: the CLI starts fast,
and Temporal's workflow sandbox, which re-imports it for every conversation, loads nothing it
does not need.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any


def _lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package`, whose public names are the
    keys of `exports` (name -> module that defines it)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # resolved once
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


# public name -> module that defines it: the one list of the public API (`__all__` is its keys;
# the TYPE_CHECKING imports below repeat it for type checkers, and a test keeps them equal)
_EXPORTS: dict[str, str] = {
    # defining teams
    "Agent": "durable_teams.teams.builders",
    "Supervisor": "durable_teams.teams.builders",
    "Swarm": "durable_teams.teams.builders",
    "handoff": "durable_teams.teams.builders",
    "tool": "durable_teams.teams.tools",
    "get_stream_writer": "durable_teams.teams.stream_writer",
    "Result": "durable_teams.activities.tool_results",
    "Budgets": "durable_teams.workflows.options",
    # talking to conversations
    "connect": "durable_teams.client.connection",
    "start_conversation": "durable_teams.client.start",
    "send_turn": "durable_teams.client.send",
    # serving teams
    "build_worker": "durable_teams.worker.build",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and editors see
    from durable_teams.activities.tool_results import Result
    from durable_teams.client.connection import connect
    from durable_teams.client.send import send_turn
    from durable_teams.client.start import start_conversation
    from durable_teams.teams.builders import Agent, Supervisor, Swarm, handoff
    from durable_teams.teams.stream_writer import get_stream_writer
    from durable_teams.teams.tools import tool
    from durable_teams.worker.build import build_worker
    from durable_teams.workflows.options import Budgets
