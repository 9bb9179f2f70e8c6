"""`durable-teams serve`: run the gateway with uvicorn.

    DURABLE_TEAMS_GATEWAY_TOKENS=t1,t2 durable-teams serve --host 0.0.0.0 --port 8000

Tokens: operator tokens (see every thread) in $DURABLE_TEAMS_GATEWAY_TOKENS; scoped tokens
(see only the threads started with their scope) as NAME:SECRET in
$DURABLE_TEAMS_GATEWAY_SCOPED_TOKENS; or both in --tokens-file ('operator SECRET' or
'scoped NAME SECRET' a line). Without tokens the gateway accepts anyone, so it only starts bound to a loopback address.
Bearer tokens on a network need TLS: `--tls-cert`/`--tls-key` serve HTTPS (or put the gateway
behind a proxy that does); on another address without either it warns that tokens travel in
clear. It talks to the configured Temporal server ($TEMPORAL_ADDRESS, the Temporal profile),
else the embedded one (`durable-teams server-start`).

Its doors (each printed with its URL at start):
  /                      the web inbox: every question waiting for a person, answered in a click
  /threads, /questions   the native endpoints (docs/gateway.md)
  /v1/chat/completions   OpenAI Chat Completions, the team as `model` (/v1/models lists them)
  /v1/responses          the OpenAI Responses API (docs/responses.md)
  /mcp                   MCP over streamable HTTP, a tool per team (docs/mcp-server.md; the mcp extra)
  /a2a/<team>            each team as an A2A agent, its card at /a2a/<team>/.well-known/agent-card.json
                         (docs/a2a.md; the a2a extra)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import os
import ssl
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, NoReturn

from durable_teams.cli.commands import CliError, open_client
from durable_teams.cli.extras import missing_extra
from durable_teams.client.connection import TASK_QUEUE, NamespaceNotFound, require_namespace
from durable_teams.client.exit_guard import exit_now
from durable_teams.client.server_address import port_arg
from durable_teams.gateway.auth import (
    DEFAULT_MAX_BODY,
    TOKENS_ENV,
    Limits,
    is_loopback,
)
from durable_teams.gateway.exposure import ANY, Exposure
from durable_teams.gateway.scopes import (
    SCOPED_TOKENS_ENV,
    Token,
    TokenError,
    check_tokens,
    operator_tokens,
    scoped_tokens,
    tokens_file,
)
from durable_teams.gateway.team_cards import card_of
from durable_teams.live.hub import LiveHubError
from durable_teams.worker.core_log import forward_core_log
from durable_teams.worker.run import TeamLoadError, load_teams

TLS_CERT_ENV = "DURABLE_TEAMS_GATEWAY_TLS_CERT"
TLS_KEY_ENV = "DURABLE_TEAMS_GATEWAY_TLS_KEY"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_arg, default=8000)
    p.add_argument("--task-queue", default=TASK_QUEUE, help="where new threads run")
    p.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, help="largest request body, bytes")
    p.add_argument("--team", action="append", default=[],
                   help="module:attr of the teams the workers serve (give it the worker's flags)")
    p.add_argument("--examples", action="store_true",
                   help="the workers serve the example teams too (assumed when no --team is given)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a host name clients use to reach the gateway, besides localhost, 127.0.0.1, "
                        "[::1] and --host ('*': any, only behind a proxy that checks it)")
    p.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (https://app.example) whose pages may call the gateway (CORS)")
    p.add_argument("--max-requests", type=int, default=Limits.max_requests,
                   help="requests in progress per token (or client address without tokens)")
    p.add_argument("--max-followers", type=int, default=Limits.max_followers,
                   help="open event streams and streamed chat completions per token (or client address without tokens)")
    p.add_argument("--max-connections", type=int, default=1000,
                   help="connections and requests at once, all callers (503 above)")
    p.add_argument("--header-timeout", type=float, default=10.0,
                   help="seconds a client has to send a request's headers (408 after)")
    p.add_argument("--tls-cert", metavar="PEM", default=os.environ.get(TLS_CERT_ENV) or None,
                   help=f"serve HTTPS with this certificate (chain) file (${TLS_CERT_ENV})")
    p.add_argument("--tls-key", metavar="PEM", default=os.environ.get(TLS_KEY_ENV) or None,
                   help=f"the certificate's private key file (${TLS_KEY_ENV})")
    p.add_argument("--tokens-file", metavar="PATH", default=None,
                   help="bearer tokens, one a line: 'operator SECRET' (sees every thread) or "
                        "'scoped NAME SECRET' (sees the threads started with scope NAME)")
    p.add_argument("--no-chat-marks", dest="chat_marks", action="store_false",
                   help="no thread mark at the end of a chat thread's first answer (identical "
                        "chats of one token then open new threads instead of continuing theirs)")
    p.add_argument("--chat-idle", type=float, default=3600.0, metavar="SECONDS",
                   help="a chat client's thread (no X-Thread-Id) closes after this long without a message")
    return p


HOSTS_ENV = "DURABLE_TEAMS_ALLOWED_HOSTS"


def hosts_from_env() -> list[str]:
    """`--allowed-host` values from the environment (comma-separated)."""
    return [h.strip() for h in os.environ.get(HOSTS_ENV, "").split(",") if h.strip()]


def all_tokens(path: str | None) -> list[Token]:
    """The tokens declared in the environment and in `--tokens-file` (`TokenError` if unreadable)."""
    return check_tokens([*operator_tokens(), *scoped_tokens(), *(tokens_file(path) if path else [])])


def check_exposure(host: str, tokens: Sequence[object], allowed_hosts: list[str] | None = None) -> str | None:
    """Why the gateway must not start, or None."""
    if not tokens and not is_loopback(host):
        return (f"refusing to serve on {host} without tokens: set {TOKENS_ENV} "
                f"(comma-separated bearer tokens), {SCOPED_TOKENS_ENV} or --tokens-file, or bind to 127.0.0.1")
    if not tokens and ANY in (allowed_hosts or []):
        return "--allowed-host '*' needs tokens: without them any web page could reach the gateway"
    return None


def check_tls(cert: str | None, key: str | None) -> str | None:
    """Why the TLS settings cannot work, or None: one given without the other, a file not
    there, a certificate or key that does not load, a key that does not match the certificate,
    or a key protected by a pass phrase (nobody is there to type it)."""
    if (cert is None) != (key is None):
        return "--tls-cert and --tls-key go together (a certificate and its private key)"
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not os.path.isfile(path):
            return f"{flag} {path!r}: no such file"
    if cert is None or key is None:
        return None

    def no_pass_phrase() -> str:
        raise ValueError("encrypted")

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key, password=no_pass_phrase)
    except ValueError:
        return f"--tls-key {key!r} is protected by a pass phrase: give the key unencrypted (readable only by the gateway)"
    except ssl.SSLError as err:
        why = "the key does not match the certificate" if "MISMATCH" in str(err) else "not a PEM certificate and key"
        return f"--tls-cert {cert!r} / --tls-key {key!r}: {why} ({err.reason or err})"
    return None


def clear_tokens_warning(host: str, tokens: Sequence[object], cert: str | None) -> str | None:
    """The warning for bearer tokens served in clear to a network (no TLS here), else None."""
    if tokens and cert is None and not is_loopback(host):
        return (f"warning: serving on {host} over plain HTTP: bearer tokens travel in clear; give "
                "--tls-cert/--tls-key, or serve behind a proxy that terminates TLS")
    return None


async def run_gateway(args: argparse.Namespace, tokens: list[Token]) -> None:
    """Serve the gateway with uvicorn until it is stopped."""
    import uvicorn

    from durable_teams.gateway.app import create_app
    from durable_teams.gateway.connections import server_config

    client = await open_client()  # as the CLI's commands: the configured server, never a new one
    await require_namespace(client)  # else every call would be a 404 from a gateway that looks healthy
    cards = [card_of(team.spec) for team in load_teams(args.team, args.examples)]
    teams = [card.name for card in cards]
    exposure = Exposure.for_bind(args.host, args.allowed_host + hosts_from_env(), args.allowed_origin)
    limits = Limits(max_body=args.max_body, max_requests=args.max_requests,
                    max_followers=args.max_followers)
    app = create_app(client, task_queue=args.task_queue, tokens=tokens, teams=teams,
                     exposure=exposure, limits=limits, chat_idle_seconds=args.chat_idle,
                     chat_marks=args.chat_marks, cards=cards)
    tls = {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key} if args.tls_cert else {}
    if tls:  # a TLS handshake gets the header deadline too (asyncio's default is 60 s, and a
        # connection still in its handshake does not count against --max-connections yet)
        loop = asyncio.get_running_loop()
        loop.create_server = functools.partial(  # type: ignore[method-assign]
            loop.create_server, ssl_handshake_timeout=args.header_timeout)
    config = server_config(app, args.host, args.port, max_connections=args.max_connections,
                           header_timeout=args.header_timeout, **tls)
    print("\n".join(door_lines(base_url(args.host, args.port, bool(tls)), teams,
                               mcp=importlib.util.find_spec("mcp") is not None,
                               a2a=importlib.util.find_spec("a2a") is not None)), file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve()


def base_url(host: str, port: int, tls: bool) -> str:
    """Where clients reach the gateway bound to `host`: an address that binds every interface
    is shown as this machine's loopback (reachable here; elsewhere use the machine's name)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def door_lines(url: str, teams: Sequence[str], mcp: bool, a2a: bool) -> list[str]:
    """What `serve` prints at start: where each door is (the routes of durable_teams/gateway/app.py)."""
    lines = [f"durable-teams gateway at {url} (teams: {', '.join(teams) or 'none'})",
             f"  inbox:             {url}/",
             f"  native threads:    {url}/threads  (questions: {url}/questions)",
             f"  chat completions:  {url}/v1/chat/completions  (models: {url}/v1/models)",
             f"  responses:         {url}/v1/responses",
             f"  MCP:               {url}/mcp" if mcp else
             "  MCP:               not served (pip install 'durable-teams[mcp]')"]
    if not a2a:
        return [*lines, "  A2A:               not served (pip install 'durable-teams[a2a]')"]
    return lines + [f"  A2A ({team}): {url}/a2a/{team}  (card: {url}/a2a/{team}/.well-known/agent-card.json)"
                    for team in teams]


def run_until_stopped(serving: Coroutine[Any, Any, None],
                      expected: tuple[type[BaseException], ...]) -> NoReturn:
    """Run a long-lived command (the gateway, the MCP server) until it ends or is stopped, and end
    the process: Ctrl-C is exit 0; an `expected` error is its own one line, any other error one
    line with its type, exit 1; never a traceback (`exit_now`: no interpreter teardown)."""
    code = 0
    try:
        asyncio.run(serving)
    except KeyboardInterrupt:
        pass
    except expected as err:
        print(f"durable-teams: {err}", file=sys.stderr)
        code = 1
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        text = str(err).strip()
        print(f"durable-teams: {type(err).__name__}: {text.splitlines()[0] if text else ''}", file=sys.stderr)
        code = 1
    exit_now(code)


def main(argv: Sequence[str]) -> int:
    """Serve until stopped. A gateway refused before it starts returns 2; once it has talked to
    Temporal the process ends here (`exit_now`: no interpreter teardown, which could hang on the
    SDK's native threads), after one line on stderr if it failed."""
    args = parser().parse_args(argv)
    try:
        tokens = all_tokens(args.tokens_file)
    except TokenError as err:
        print(f"durable-teams: {err}", file=sys.stderr)
        return 2
    refusal = (check_exposure(args.host, tokens, args.allowed_host + hosts_from_env())
               or check_tls(args.tls_cert, args.tls_key))
    if refusal:
        print(f"durable-teams: {refusal}", file=sys.stderr)
        return 2
    warning = clear_tokens_warning(args.host, tokens, args.tls_cert)
    if warning:
        print(f"durable-teams: {warning}", file=sys.stderr)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        print(f"durable-teams: {missing_extra(err, 'serve')}", file=sys.stderr)
        return 2
    forward_core_log()  # the SDK core's warnings to stderr through Python's logging
    run_until_stopped(run_gateway(args, tokens), (CliError, LiveHubError, TeamLoadError, NamespaceNotFound))
