"""A real MCP server for the tests, written with the `mcp` package's server API (MCPServer).

    python tests/mcp_server.py          # serves over stdio (the tests start it as a subprocess)

`build()` makes the same server for streamable HTTP in the test process. Every tool run is
appended to the file named by `MCP_CALL_LOG` (if set), so a test counts runs in any process.
`increment` and `pid` show whether calls share one server process (a persistent session);
`crash` ends the server's process in the middle of a call.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def _log(line: str) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def build() -> MCPServer:
    server = MCPServer("orders")

    @server.tool()
    def lookup_order(order_id: str) -> str:
        """Find an order by its number."""
        _log(f"lookup_order {order_id}")
        return f"Order {order_id}: hiking boots, delivered."

    @server.tool()
    def refund(order_id: str, reason: str = "not given") -> str:
        """Refund an order. A person approves every refund."""
        _log(f"refund {order_id}")
        return f"Refunded order {order_id}."

    @server.tool()
    def broken(reason: str) -> str:
        """A tool that always fails (ToolError: the message goes to the client)."""
        _log("broken")
        raise ToolError(f"cannot do that: {reason}")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Takes its time."""
        _log("slow")
        await anyio.sleep(seconds)
        return "done"

    count = 0

    @server.tool()
    def increment() -> str:
        """Count the calls this server process has had (its state)."""
        nonlocal count
        count += 1
        return str(count)

    @server.tool()
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool()
    def crash(marker: str = "") -> str:
        """Exit the server's process in the middle of the call. Once, if `marker` names a file:
        the first call creates it and exits, a later call finds it and answers."""
        _log("crash")
        if marker and os.path.exists(marker):
            return "Back again."
        if marker:
            open(marker, "w").close()
        os._exit(1)

    return server


if __name__ == "__main__":
    build().run("stdio")
