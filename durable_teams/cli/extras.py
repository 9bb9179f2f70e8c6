"""What each optional extra installs, and the one line a command prints when it is missing.

`pip install durable-teams` gives the worker, the CLI, the demo and the Python client. The rest
is in extras (pyproject.toml), and a command that needs one says which, instead of a traceback.
`tests/test_dependencies.py` keeps this table equal to what pyproject.toml declares."""

from __future__ import annotations

IMPORTS_OF_EXTRA: dict[str, frozenset[str]] = {
    # the HTTP gateway (durable-teams serve) and the servers under it
    "gateway": frozenset({"starlette", "uvicorn", "h11"}),
    # the teams as MCP tools (durable-teams mcp, /mcp) and tools from MCP servers; the stdio
    # server shares the gateway's serving code
    "mcp": frozenset({"mcp", "mcp_types", "starlette", "uvicorn", "h11"}),
    # the teams as A2A agents on the gateway (/a2a/{team})
    "a2a": frozenset({"a2a", "starlette", "uvicorn", "h11"}),
    "postgres": frozenset({"psycopg"}),  # the memory store on PostgreSQL
    "live": frozenset({"redis"}),  # live tokens between processes
    "crypto": frozenset({"cryptography"}),  # encryption at rest, the codec server
    "otel": frozenset({"opentelemetry"}),  # OpenTelemetry traces
}
"""Extra -> the top-level import names our modules take from it (what pyproject.toml declares
for it, by import name). The first extra naming an import is that import's home."""

COMMAND_EXTRA = {"serve": "gateway", "mcp": "mcp", "codec-server": "crypto"}
"""Commands that exist for one extra: a missing import of theirs names that extra."""


def extra_of(module: str, command: str = "") -> str | None:
    """The extra that installs `module` (a dotted import name), preferring the command's own."""
    top = module.partition(".")[0]
    own = COMMAND_EXTRA.get(command)
    if own is not None and top in IMPORTS_OF_EXTRA[own]:
        return own
    return next((extra for extra, tops in IMPORTS_OF_EXTRA.items() if top in tops), None)


def missing_module(err: BaseException) -> str | None:
    """The dotted name of the module whose import failed behind `err` (an ImportError raised
    `from` the missing one counts too), or None when no import failed."""
    cause: BaseException | None = err
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError) and cause.name:
            return cause.name
        cause = cause.__cause__ or cause.__context__
    return None


def missing_extra(err: BaseException, command: str = "") -> str | None:
    """The one line for an import of an extra that is not installed, or None when `err` is
    something else."""
    name = missing_module(err)
    extra = extra_of(name, command) if name else None
    if extra is None:
        return None
    who = f"durable-teams {command}" if command else "this feature"
    return f"{who} needs the optional '{extra}' extra (no module named {name!r}): pip install 'durable-teams[{extra}]'"
