"""`durable-teams`: run the demo, start teams, read conversations, answer questions.

    durable-teams demo                         # FAANG demo on the embedded server
    durable-teams worker                       # a worker (same as python worker.py)
    durable-teams chat acme [--thread ID]      # talk to a team, turn by turn
    durable-teams run faang "what's 2+2?"      # start a team by name, print the answer
    durable-teams run faang "..." --no-wait    # just print the workflow id
    durable-teams status <workflow-id>
    durable-teams transcript <workflow-id> [--full]
    durable-teams follow <workflow-id>         # every step as it happens, until it ends
    durable-teams pending                      # every question waiting for a person
    durable-teams answer <workflow-id> "text" [--question q2]
    durable-teams approve|deny <workflow-id> [--question q2] [--reason "..."]
    durable-teams codec-server [--port 8081]   # decrypts payloads for the Web UI / temporal CLI
    durable-teams graph faang [--team myteams:TEAMS]   # a team as a Mermaid diagram
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Sequence

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client import ReplyRejected, send_reply
from durable_teams.codec import EncryptionKeyError
from durable_teams.console import format_event, format_message, format_question
from durable_teams.costs import usage_lines
from durable_teams.events import follow
from durable_teams.runtime import TASK_QUEUE, connect
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput, ConversationStatus, Question


async def _client() -> Client:
    address = os.environ.get("TEMPORAL_ADDRESS")
    if not address:
        from durable_teams.devserver import DevServer

        address = DevServer().start(detach=True).address
    return await connect(address)


async def cmd_run(args: argparse.Namespace) -> int:
    client = await _client()
    workflow_id = args.id or f"{args.team}-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team_name=args.team, task=args.task),
        id=workflow_id, task_queue=TASK_QUEUE)
    print(f"workflow id: {workflow_id}")
    if args.no_wait:
        return 0
    result = await handle.result()
    print(f"[{result.agent}] {result.answer}")
    print("\n".join(usage_lines(result.usage)))
    return 0 if result.status == "completed" else 1


async def cmd_status(args: argparse.Namespace) -> int:
    client = await _client()
    handle = client.get_workflow_handle(args.workflow_id)
    described = await handle.describe()
    status: ConversationStatus = await handle.query(TeamWorkflow.status)
    print(f"workflow: {args.workflow_id} ({described.status.name if described.status else '?'})")
    print(f"turns: {status.turns}  model calls: {status.model_calls}  active agent: {status.active_agent or '-'}")
    if status.last_reply:
        print(f"last reply [{status.last_reply.agent}, {status.last_reply.status}]: {status.last_reply.text}")
    print("\n".join(usage_lines(status.usage)))
    for q in status.pending:
        print(format_question(args.workflow_id, q))
    for child in status.children:  # their questions are listed, and answered, under their ids
        print(f"running as a child workflow: {child}  (durable-teams status {child})")
    return 0


async def cmd_transcript(args: argparse.Namespace) -> int:
    client = await _client()
    messages = await client.get_workflow_handle(args.workflow_id).query(
        TeamWorkflow.transcript, args.full)
    for m in messages:
        print(format_message(m))
    return 0


async def cmd_follow(args: argparse.Namespace) -> int:
    client = await _client()
    async for event in follow(client, args.workflow_id, start=args.start):
        if event.type == "done":
            print(f"(workflow {event.text.lower()})")
        else:
            print(format_event(event), flush=True)
    return 0


async def pending_questions(client: Client) -> list[tuple[str, Question]]:
    found: list[tuple[str, Question]] = []
    async for wf in client.list_workflows("AwaitingHuman = true AND ExecutionStatus = 'Running'"):
        questions = await client.get_workflow_handle(wf.id).query(TeamWorkflow.pending_questions)
        found += [(wf.id, q) for q in questions]
    return found


async def cmd_pending(args: argparse.Namespace) -> int:
    found = await pending_questions(await _client())
    if not found:
        print("No questions are waiting for a person.")
    for workflow_id, q in found:
        print(format_question(workflow_id, q))
        print()
    return 0


async def cmd_answer(args: argparse.Namespace) -> int:
    qid = await send_reply(await _client(), args.workflow_id, args.question, text=args.text)
    print(f"Answered {qid}.")
    return 0


async def cmd_approve(args: argparse.Namespace) -> int:
    approved = args.command == "approve"
    qid = await send_reply(await _client(), args.workflow_id, args.question,
                           approved=approved, text=args.reason or "")
    print(f"{'Approved' if approved else 'Denied'} {qid}.")
    return 0


async def cmd_chat(args: argparse.Namespace) -> int:
    from durable_teams.chat import chat

    return await chat(await _client(), args.team, args.thread)


async def cmd_demo(args: argparse.Namespace) -> int:
    from durable_teams.demo import run_demo

    return await run_demo(args.name)


async def cmd_graph(args: argparse.Namespace) -> int | str:
    from durable_teams.graph import team_graph
    from durable_teams.worker import load_teams

    try:
        teams = {t.spec.name: t.spec for t in load_teams(args.team_module)}
    except (ImportError, AttributeError, ValueError) as err:
        return f"durable-teams: could not load {args.team_module}: {err}"
    if args.team not in teams:
        return f"durable-teams: no team named {args.team!r} (known: {', '.join(sorted(teams))})"
    print(team_graph(teams[args.team]), end="")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a demo team on the embedded server")
    demo.add_argument("name", nargs="?", default="faang")
    worker = sub.add_parser("worker", help="run a worker (same as python worker.py)")
    worker.add_argument("--team", action="append", default=[], help="module:attr of extra teams")
    sub.add_parser("codec-server", help="decrypt payloads for the Web UI (codec-server --help)")
    sub.add_parser("server-stop", help="stop the embedded dev server started by the CLI or worker")
    chat = sub.add_parser("chat", help="talk to a team, turn by turn (a thread per workflow)")
    chat.add_argument("team")
    chat.add_argument("--thread", help="the conversation's workflow id (new or existing)")
    run = sub.add_parser("run", help="start a team on a task")
    run.add_argument("team")
    run.add_argument("task")
    run.add_argument("--id")
    run.add_argument("--no-wait", action="store_true")
    for name in ("status", "transcript"):
        cmd = sub.add_parser(name)
        cmd.add_argument("workflow_id")
        if name == "transcript":
            cmd.add_argument("--full", action="store_true", help="include every agent's private steps")
    follow = sub.add_parser("follow", help="print a conversation's steps as they happen")
    follow.add_argument("workflow_id")
    follow.add_argument("--start", type=int, default=0, help="log index to start from")
    sub.add_parser("pending", help="list questions waiting for a person")
    answer = sub.add_parser("answer")
    answer.add_argument("workflow_id")
    answer.add_argument("text")
    answer.add_argument("--question")
    for name in ("approve", "deny"):
        cmd = sub.add_parser(name)
        cmd.add_argument("workflow_id")
        cmd.add_argument("--question")
        cmd.add_argument("--reason", default="")
    graph = sub.add_parser("graph", help="print a team as a Mermaid diagram")
    graph.add_argument("team")
    graph.add_argument("--team", dest="team_module", action="append", default=[],
                       help="module:attr of extra teams")
    return p


COMMANDS = {
    "run": cmd_run, "status": cmd_status, "transcript": cmd_transcript, "pending": cmd_pending,
    "answer": cmd_answer, "approve": cmd_approve, "deny": cmd_approve, "demo": cmd_demo,
    "chat": cmd_chat, "follow": cmd_follow, "graph": cmd_graph,
}


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["codec-server"]:  # its own options: durable_teams/codec_server.py
        from durable_teams.codec_server import main as codec_server

        return codec_server(argv[1:])
    args = parser().parse_args(argv)
    if args.command == "server-stop":
        from durable_teams.devserver import DevServer

        print("Stopped." if DevServer().stop_detached() else "No embedded server was started here.")
        return
    if args.command == "worker":
        from durable_teams.worker import main as run_worker

        run_worker([f"--team={team}" for team in args.team])
        return
    code = asyncio.run(run_command(args))
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    # Skip interpreter teardown: the Temporal client's native threads can outlive the event loop
    # and abort the process while Python finalizes ("PyGILState_Release", sdk-python issue 300).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


async def run_command(args: argparse.Namespace) -> int | str:
    """The command's exit status, or one readable line instead of a traceback. Caught in here,
    inside the event loop, so the client's native runtime is released before the interpreter
    shuts down (an exception carried out of `asyncio.run` keeps it alive until then)."""
    try:
        return await COMMANDS[args.command](args)
    except RPCError as err:
        workflow_id = getattr(args, "workflow_id", None)
        if err.status == RPCStatusCode.NOT_FOUND and workflow_id:
            return f"durable-teams: no conversation with workflow id {workflow_id!r} ({err.message})"
        return f"durable-teams: the Temporal server refused the call: {err.message}"
    except WorkflowQueryFailedError as err:
        return f"durable-teams: the workflow could not answer: {err.message}"
    except (ReplyRejected, EncryptionKeyError) as err:
        return f"durable-teams: {err}"
    except SystemExit as stop:  # a command's own sys.exit("reason")
        if stop.code is None:
            return 0
        return stop.code if isinstance(stop.code, int | str) else 1
