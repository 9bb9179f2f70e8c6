"""`durable-teams`: the entry point. It imports only the command it runs: `memory`, `serve`,
`mcp`, `replay` and `codec-server` have their own modules and options; the rest are parsed and
run by durable_teams/cli/command_line.py (its usage text is `durable-teams --help`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from durable_teams.cli.extras import missing_extra


def main(argv: Sequence[str] | None = None) -> None:
    """Run a command. One that talks to Temporal ends the process when done (`exit_now`: no
    interpreter teardown, which could hang or abort on the SDK's native threads); `--help`, a
    usage error and a gateway refused before it starts raise SystemExit as usual."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        _main(argv)
    except ImportError as err:  # an optional extra this command needs is not installed
        line = missing_extra(err, argv[0] if argv else "")
        if line is None:
            raise
        print(f"durable-teams: {line}", file=sys.stderr)
        sys.exit(2)


def _main(argv: list[str]) -> None:
    if argv[:1] == ["codec-server"]:  # its own options: durable_teams/encryption/codec_server.py
        from durable_teams.encryption.codec_server import main as codec_server

        return codec_server(argv[1:])
    if argv[:1] == ["mcp"]:  # the teams as MCP tools over stdio: durable_teams/cli/mcp_stdio.py
        from durable_teams.cli.mcp_stdio import main as mcp_stdio

        sys.exit(mcp_stdio(argv[1:]))
    if argv[:1] == ["memory"]:  # the memory store, no Temporal: durable_teams/cli/memory_commands.py
        from durable_teams.cli.memory_commands import main as memory

        code = memory(argv[1:])
        if isinstance(code, str):
            print(code, file=sys.stderr)
        sys.exit(1 if isinstance(code, str) else code)
    if argv[:1] == ["replay"]:  # its own options and exit status: durable_teams/cli/replay_command.py
        from durable_teams.cli.replay_command import main as replay

        return replay(argv[1:])
    if argv[:1] == ["serve"]:  # the HTTP gateway, its own options: durable_teams/cli/serve.py
        from durable_teams.cli.serve import main as serve

        sys.exit(serve(argv[1:]))
    from durable_teams.cli.command_line import run

    run(argv)
