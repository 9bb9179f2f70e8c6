"""The MCP test server (`mcp_server.py`) as the MCP tests run it: its path, served over HTTP in
the test's loop, and the tool messages a transcript holds."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from durable_teams.workflows.messages import Message

from .waiting import until

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def tool_messages(transcript: list[Message]) -> list[tuple[str | None, str | None, str]]:
    return [(m.name, m.content, m.kind) for m in transcript if m.role == "tool"]


@asynccontextmanager
async def http_server(server: object) -> AsyncIterator[str]:
    """Serve an MCPServer over streamable HTTP on 127.0.0.1, on a free port, in this loop."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app()  # type: ignore[attr-defined]
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                        timeout_graceful_shutdown=2))
    task = asyncio.create_task(web.serve(sockets=[sock]))
    async def started() -> bool:
        return bool(web.started)
    await until(started, "the MCP test server started", within=30, every=0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 30)
        sock.close()
