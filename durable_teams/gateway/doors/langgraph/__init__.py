"""The LangGraph Server API as a door of the gateway, at /langgraph: LangGraph's clients
(`langgraph-sdk`, `@langchain/langgraph-sdk`) drive the teams unchanged (docs/langgraph-server.md).
A team is an assistant, a thread a conversation, a run a turn."""

from __future__ import annotations

from durable_teams.gateway.core.mounts import Mount, Serving


def mount(serving: Serving) -> Mount:
    """Every route of the door under /langgraph (langgraph_routes.py)."""
    from durable_teams.gateway.doors.langgraph.langgraph_routes import langgraph_mount

    return Mount([langgraph_mount()])
