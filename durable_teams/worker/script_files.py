"""Scripts for your own teams: watch a team work with no model key (docs/scripted-models.md).

A script names teams, then agents, then each agent's replies in order (its n-th model call in a
conversation gets the n-th reply). In JSON (`durable-teams worker --script myscript.json`):

    {"my-team": {
        "supervisor":  [{"call": "transfer_to_math_expert"}, {"say": "2 + 2 = 4."}],
        "math_expert": [{"call": "add", "arguments": {"a": 2, "b": 2}}, {"say": "4"}]}}

A reply is `{"say": text}` (or a bare string), `{"call": tool, "arguments": {...}}`, several
calls at once `{"calls": [{"call": ...}, ...], "say": optional text}`, or a reply chosen by
what happened since the agent's last step: `{"when": "It was not run", "then": reply,
"otherwise": reply}`. In Python (a `SCRIPT` beside `TEAMS` in your team module, found by
the worker on its own) the same dicts, or `say(...)`, `call(...)`, `calls(...)`, `when(...)`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from durable_teams.teams.builders import CompiledTeam
from durable_teams.teams.team_tools import team_names
from durable_teams.worker.scripted import (
    AgentScript,
    ScriptStep,
    Step,
    When,
    call,
    calls,
    say,
    when,
)
from durable_teams.worker.team_modules import import_team_module, split_spec
from durable_teams.workflows.messages import Message

TeamScripts = dict[str, AgentScript]
"""A team's name -> its agents' scripts."""


class ScriptError(ValueError):
    """A script that cannot be read, or that does not fit the teams served."""


def load_script_spec(spec: str) -> TeamScripts:
    """A JSON file, or `module:attr` (attr defaults to SCRIPT) holding the same in Python."""
    if spec.endswith(".json") or Path(spec).is_file():
        try:
            data = json.loads(Path(spec).read_text(encoding="utf-8"))
        except OSError as err:
            raise ScriptError(f"cannot read the script {spec!r}: {err.strerror or err}") from None
        except ValueError as err:
            raise ScriptError(f"the script {spec!r} is not JSON: {err}") from None
    else:
        module, attr = split_spec(spec)
        attr = attr if ":" in spec else "SCRIPT"
        try:
            data = getattr(import_team_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise ScriptError(f"cannot load the script {spec!r}: {err}") from None
    return parse_script(data, spec)


def parse_script(data: Any, where: str = "the script") -> TeamScripts:
    """Team -> agent -> replies, from JSON-like data (or Python steps)."""
    if not isinstance(data, Mapping) or not data:
        raise ScriptError(f"{where}: expected an object of teams, each an object of agents "
                          '(docs/scripted-models.md), e.g. {"my-team": {"supervisor": [{"say": "Hi"}]}}')
    scripts: TeamScripts = {}
    for team, agents in data.items():
        if not isinstance(agents, Mapping):
            raise ScriptError(f"{where}: team {team!r}: expected an object of agents and their replies")
        scripts[str(team)] = {
            str(agent): [parse_step(step, f"{where}: team {team!r}, agent {agent!r}, reply {i + 1}")
                         for i, step in enumerate(_steps(replies, f"{where}: team {team!r}, agent {agent!r}"))]
            for agent, replies in agents.items()}
    return scripts


def _steps(replies: Any, where: str) -> list[Any]:
    if not isinstance(replies, list):
        raise ScriptError(f"{where}: expected a list of replies")
    return replies


def parse_step(step: Any, where: str) -> ScriptStep:
    """One reply (see the module's docstring)."""
    if isinstance(step, Message | When):
        return step
    if isinstance(step, str):
        return say(step)
    if not isinstance(step, Mapping):
        raise ScriptError(f"{where}: expected {{'say': ...}}, {{'call': ...}} or {{'when': ...}}")
    keys = set(step)
    if "when" in keys:
        if keys != {"when", "then", "otherwise"} or not isinstance(step["when"], str):
            raise ScriptError(f"{where}: a 'when' reply has a text to look for, 'then' and 'otherwise'")
        return when(step["when"], _plain(step["then"], where), _plain(step["otherwise"], where))
    if "calls" in keys:
        if not keys <= {"calls", "say"} or not isinstance(step["calls"], list) or not step["calls"]:
            raise ScriptError(f"{where}: 'calls' is a list of {{'call': tool, 'arguments': {{...}}}}")
        pairs = [_call(c, where) for c in step["calls"]]
        return calls(*pairs, text=_text(step.get("say", ""), where))
    if "call" in keys:
        if not keys <= {"call", "arguments"}:
            raise ScriptError(f"{where}: a 'call' reply has only 'call' and 'arguments'")
        name, arguments = _call(step, where)
        return call(name, **arguments)
    if keys == {"say"}:
        return say(_text(step["say"], where))
    raise ScriptError(f"{where}: unknown reply {dict(step)!r}: use 'say', 'call', 'calls' or 'when'")


def _plain(step: Any, where: str) -> Step:
    parsed = parse_step(step, where)
    if isinstance(parsed, When):
        raise ScriptError(f"{where}: a 'when' inside a 'when' (give a plain reply)")
    return parsed


def _call(step: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(step, Mapping) or not isinstance(step.get("call"), str):
        raise ScriptError(f"{where}: a call is {{'call': tool name, 'arguments': {{...}}}}")
    arguments = step.get("arguments", {})
    if not isinstance(arguments, Mapping):
        raise ScriptError(f"{where}: 'arguments' of {step['call']!r} is an object of argument values")
    return step["call"], dict(arguments)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ScriptError(f"{where}: 'say' is a text")
    return value


def scripts_for(teams: Iterable[CompiledTeam], scripts: TeamScripts) -> TeamScripts:
    """`scripts` for the teams served, each nested team answered from its top team's script
    unless the script names it; a script of a team not served is refused (a typo would
    otherwise leave the team silently unscripted)."""
    teams = list(teams)
    served = {name for team in teams for name in team_names(team.spec)}
    unknown = sorted(set(scripts) - served)
    if unknown:
        raise ScriptError(f"the script names team {unknown[0]!r}, which this worker does not serve "
                          f"(teams: {', '.join(sorted(served))})")
    out = dict(scripts)
    for team in teams:
        if team.spec.name in scripts:
            for nested in team_names(team.spec):
                out.setdefault(nested, scripts[team.spec.name])
    return out


def worker_scripts(team_specs: Iterable[str], served: Iterable[CompiledTeam], examples: bool,
                   script: str | None = None) -> TeamScripts:
    """What a scripted worker answers with: the example teams' recorded replies (when it
    serves them), each team module's `SCRIPT`, then `script` (a file or module:attr)."""
    from durable_teams.examples import example_scripts

    specs = list(team_specs)
    found: TeamScripts = example_scripts() if examples or not specs else {}
    for spec in specs:
        module, _ = split_spec(spec)
        own = getattr(import_team_module(module), "SCRIPT", None)  # imported already by load_teams
        if own is not None:
            found.update(parse_script(own, f"{module}.SCRIPT"))
    if script:
        found.update(load_script_spec(script))
    return scripts_for(served, found)
