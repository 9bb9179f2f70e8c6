"""`durable-teams replay`: run recorded conversations against a candidate and report what changed.

    durable-teams replay tests/histories/faang.json --team durable_teams.examples.replay_candidates:FAANG_MATH_FIRST
    durable-teams replay support-1a2b --team mycandidate.py:TEAMS --fail-on lost-approval
    durable-teams replay --query 'Team = "support" AND CloseTime > "2026-11-01"' --model gpt-4o --html report.html

Sources: exported history files (`temporal workflow show -w ID -o json > ID.json`), workflow
ids, or a visibility query (`--query`), read from the configured server. The candidate: teams
from a module (`--team`, replacing the recorded teams of the same name; the others run as
recorded), `--model` for every agent, `--instructions AGENT=TEXT` (or AGENT=@file), and the
model: `--model-endpoint URL`, else OPENAI_API_KEY / OPENAI_BASE_URL, else the scripts (SCRIPT
beside TEAMS, or --script). The replay runs on a Temporal server and a worker of its own, in
this process: nothing reaches production threads, memories or caches. A tool call the record
has gets its recorded result; another runs only for an idempotent tool with
--allow-live-tools, else it gets a marked stand-in. A question the record does not answer is
answered from --answers FILE, else that conversation stops there.

Exit status: 0 when no --fail-on threshold is crossed, 4 when one is, 1 on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from durable_teams.activities.model import ModelBackend, OpenAIBackend, is_live_model_configured
from durable_teams.cli.commands import CliError, open_client
from durable_teams.cli.costs import load_prices
from durable_teams.client.exit_guard import exit_now
from durable_teams.encryption.codec import EncryptionKeyError
from durable_teams.encryption.redact import mask_url
from durable_teams.examples import example_scripts
from durable_teams.replay.candidate import Candidate, CandidateError
from durable_teams.replay.comparison import FAIL_ON_HELP, parse_fail_on, totals, verdict
from durable_teams.replay.history_records import UnreadableHistory
from durable_teams.replay.question_book import load_answers
from durable_teams.replay.replay_runner import ReplaySettings, private_server, replay
from durable_teams.replay.replay_sources import records_of, split_sources
from durable_teams.replay.report_page import report_html
from durable_teams.replay.reports import report_json, report_markdown
from durable_teams.teams.builders import CompiledTeam
from durable_teams.teams.team_tools import team_names
from durable_teams.worker.attempt_log import one_line_attempt_failures
from durable_teams.worker.core_log import forward_core_log
from durable_teams.worker.run import TeamLoadError, load_teams
from durable_teams.worker.script_files import (
    ScriptError,
    load_script_spec,
    parse_script,
    scripts_for,
)
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.worker.team_modules import import_team_module, split_spec

THRESHOLD_CROSSED = 4


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams replay", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sources", nargs="*", metavar="SOURCE", help="an exported history file (.json) or a workflow id")
    p.add_argument("--query", help="a visibility query: every conversation it finds is replayed")
    p.add_argument("--team", action="append", default=[], metavar="MODULE:ATTR",
                   help="the candidate's teams (module:attr or path/to/file.py:attr)")
    p.add_argument("--script", metavar="FILE", help="replies for a scripted candidate (a JSON file or module:attr)")
    p.add_argument("--model", help="every agent's model in the candidate")
    p.add_argument("--instructions", action="append", default=[], metavar="AGENT=TEXT",
                   help="an agent's (or supervisor's) instructions in the candidate; AGENT=@file reads a file")
    p.add_argument("--model-endpoint", metavar="URL", help="an OpenAI-compatible endpoint the candidate calls")
    p.add_argument("--answers", metavar="FILE", help="answers to questions the record does not have (JSON rules)")
    p.add_argument("--allow-live-tools", action="store_true",
                   help="run a tool call the record does not have, when the tool is declared idempotent")
    p.add_argument("--fail-on", action="append", default=[], metavar="RULES", help=FAIL_ON_HELP)
    p.add_argument("--prices", metavar="FILE", help="a price table for the cost ($DURABLE_TEAMS_PRICES)")
    p.add_argument("--markdown", metavar="FILE", help="write the Markdown report there (default: stdout)")
    p.add_argument("--json", metavar="FILE", help="write the JSON report there ('-': stdout)")
    p.add_argument("--html", metavar="FILE", help="write the HTML report (transcripts side by side) there")
    p.add_argument("--concurrency", type=int, default=20, help="conversations replayed at once (20)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one conversation may take (600)")
    return p


def instructions_of(items: Sequence[str]) -> dict[str, str]:
    found = {}
    for item in items:
        agent, sep, text = item.partition("=")
        if not sep or not agent.strip():
            raise CliError(f"--instructions {item!r}: expected AGENT=TEXT or AGENT=@file")
        if text.startswith("@"):
            try:
                text = Path(text[1:]).read_text("utf-8")
            except OSError as err:
                raise CliError(f"--instructions {agent}: cannot read {text[1:]}: {err.strerror or err}") from None
        found[agent.strip()] = text
    return found


def scripts_of(args: argparse.Namespace, teams: Sequence[CompiledTeam]) -> dict:
    """The scripts a scripted candidate answers from: the examples', each team module's SCRIPT
    (for the teams it serves), then --script."""
    served = {name for team in teams for name in team_names(team.spec)}
    own: dict = {}
    for spec in args.team:
        script = getattr(import_team_module(split_spec(spec)[0]), "SCRIPT", None)
        if script is not None:  # a module's SCRIPT may script teams not replayed here
            own.update({t: s for t, s in parse_script(script, f"{spec} SCRIPT").items() if t in served})
    if args.script:
        own.update(load_script_spec(args.script))
    return {**example_scripts(), **scripts_for(teams, own)}  # nested teams answer from their top team's


def candidate_of(args: argparse.Namespace) -> Candidate:
    teams = load_teams(args.team) if args.team else []
    backend: ModelBackend
    if args.model_endpoint:
        backend, model = OpenAIBackend(base_url=args.model_endpoint), f"endpoint {mask_url(args.model_endpoint)}"
    elif is_live_model_configured():
        backend, model = OpenAIBackend(), "the configured model endpoint"
    else:
        backend, model = ScriptedModel(teams=scripts_of(args, teams)), "a scripted model"
    parts = [f"teams {', '.join(args.team)}" if args.team else "the recorded teams"]
    parts += [f"model {args.model}"] if args.model else []
    instructions = instructions_of(args.instructions)
    parts += [f"new instructions for {', '.join(sorted(instructions))}"] if instructions else []
    return Candidate(backend, teams, args.model, instructions, f"{'; '.join(parts)} ({model})")


async def run(args: argparse.Namespace) -> int:
    rules = parse_fail_on(args.fail_on)
    settings = ReplaySettings(args.allow_live_tools, load_answers(args.answers) if args.answers else [],
                              load_prices(args.prices), args.concurrency, args.timeout)
    candidate = candidate_of(args)
    needs_server = args.query or split_sources(args.sources)[1]
    records = await records_of(await open_client() if needs_server else None, args.sources, args.query)
    if not records:
        raise CliError("no conversations to replay: give history files, workflow ids or --query")
    print(f"Replaying {len(records)} conversation(s) against {candidate.description}...", file=sys.stderr)
    async with private_server() as client:
        diffs = await replay(client, records, candidate, settings)
    total = totals(diffs)
    crossed = verdict(total, rules)
    markdown = report_markdown(diffs, total, crossed, candidate.description)
    _write(args.markdown, markdown, default_stdout=args.json != "-")
    if args.json:
        _write(args.json, report_json(diffs, total, crossed, candidate.description))
    if args.html:
        _write(args.html, report_html(diffs, total, crossed, candidate.description))
    for line in crossed:
        print(f"durable-teams replay: threshold crossed: {line}", file=sys.stderr)
    return THRESHOLD_CROSSED if crossed else 0


def _write(path: str | None, text: str, default_stdout: bool = True) -> None:
    if path == "-" or (path is None and default_stdout):
        sys.stdout.write(text)
        sys.stdout.flush()
    elif path is not None:
        Path(path).write_text(text, "utf-8")


def main(argv: Sequence[str]) -> None:
    """Parse (a usage error or --help exits as argparse does), replay, and end the process
    with the exit status (no interpreter teardown: durable_teams/client/exit_guard.py)."""
    args = parser().parse_args(argv)
    if not args.sources and not args.query:
        parser().error("give history files, workflow ids or --query")
    forward_core_log()
    one_line_attempt_failures()  # a candidate's failed model call: one line, not a traceback
    code: int | str
    try:
        code = asyncio.run(run(args))
    except KeyboardInterrupt:
        code = 130
    except (CliError, CandidateError, UnreadableHistory, TeamLoadError, ScriptError, EncryptionKeyError,
            ValueError, OSError) as err:
        code = f"durable-teams replay: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        text = str(err).strip()
        code = f"durable-teams replay: {type(err).__name__}{': ' + text.splitlines()[0] if text else ''}"
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    exit_now(code)
