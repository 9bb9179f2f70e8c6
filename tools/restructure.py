"""Group the `durable_teams` package by role (issue 24): one mapping table, applied mechanically.

    python tools/restructure.py          # from the repository root, on a clean checkout of main

What it does, in order:
1. splits the modules that hold two roles (SPLITS: named top-level definitions move to a new
   module, which takes a copy of the old one's imports; ruff then drops the unused ones);
2. `git mv`s every file in MOVES and gives each new folder an `__init__.py`;
3. rewrites every reference in the repository's .py, .md, .toml, .yml, .cfg, Dockerfile and
   .ci/run files: dotted paths (`durable_teams.runtime` -> `durable_teams.worker.build`, or per
   name for SPLITS: `from durable_teams.runtime import connect` -> `...client.connection`),
   `from durable_teams import live` -> `from durable_teams.live import hub as live`, relative
   imports of renamed siblings in workflows/ and activities/, and file paths in docs and
   comments (`durable_teams/live_redis.py` -> `durable_teams/live/redis_hub.py`);
4. adds the new packages to pyproject's package list and sorts imports (ruff --select I).

It is meant to run once, on a tree that still has the old layout; what it cannot do is done by
hand in the commits after the one that records its result.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# old file -> new file (the one table everything else is derived from)
MOVES: dict[str, str] = {
    # the client side: talking to conversations, no worker code
    "durable_teams/starting.py": "durable_teams/client/start.py",
    "durable_teams/client.py": "durable_teams/client/send.py",
    "durable_teams/replies.py": "durable_teams/client/reply_watch.py",
    "durable_teams/events.py": "durable_teams/client/events.py",
    "durable_teams/reading.py": "durable_teams/client/server_state.py",
    "durable_teams/replayed.py": "durable_teams/client/replay_state.py",
    "durable_teams/answers.py": "durable_teams/client/approvals.py",
    "durable_teams/exit_guard.py": "durable_teams/client/exit_guard.py",
    # the worker side: building and running workers, and what they run with
    "durable_teams/runtime.py": "durable_teams/worker/build.py",
    "durable_teams/worker.py": "durable_teams/worker/run.py",
    "durable_teams/scripted.py": "durable_teams/worker/scripted.py",
    "durable_teams/devserver.py": "durable_teams/worker/devserver.py",
    "durable_teams/search_attributes.py": "durable_teams/worker/search_attributes.py",
    "durable_teams/tolerant.py": "durable_teams/worker/tolerant_converter.py",
    "durable_teams/context_free.py": "durable_teams/worker/sandbox_runner.py",
    # the command line
    "durable_teams/cli.py": "durable_teams/cli/main.py",
    "durable_teams/cli_commands.py": "durable_teams/cli/commands.py",
    "durable_teams/cli_answers.py": "durable_teams/cli/answer_commands.py",
    "durable_teams/chat.py": "durable_teams/cli/chat.py",
    "durable_teams/console.py": "durable_teams/cli/console.py",
    "durable_teams/demo.py": "durable_teams/cli/demo.py",
    "durable_teams/costs.py": "durable_teams/cli/costs.py",
    "durable_teams/gateway/serve.py": "durable_teams/cli/serve.py",
    # defining teams
    "durable_teams/builders.py": "durable_teams/teams/builders.py",
    "durable_teams/team_checks.py": "durable_teams/teams/builder_checks.py",
    "durable_teams/graph.py": "durable_teams/teams/graph.py",
    "durable_teams/mcp.py": "durable_teams/teams/mcp_servers.py",
    # live deltas, secrets, traces
    "durable_teams/live.py": "durable_teams/live/hub.py",
    "durable_teams/live_redis.py": "durable_teams/live/redis_hub.py",
    "durable_teams/codec.py": "durable_teams/encryption/codec.py",
    "durable_teams/codec_server.py": "durable_teams/encryption/codec_server.py",
    "durable_teams/redact.py": "durable_teams/encryption/redact.py",
    "durable_teams/tracing.py": "durable_teams/tracing/interceptors.py",
    "durable_teams/tracing_metrics.py": "durable_teams/tracing/genai_metrics.py",
    "durable_teams/tracing_workflow.py": "durable_teams/tracing/workflow_spans.py",
    # one name per module across durable_teams/, workflows/ and activities/
    "workflows/mcp.py": "workflows/mcp_tools.py",
    "workflows/team_checks.py": "workflows/definition_checks.py",
    "activities/mcp.py": "activities/mcp_calls.py",
}

# (old file, new file, names moved there): a module that held two roles
SPLITS: list[tuple[str, str, str, list[str]]] = [
    ("durable_teams/runtime.py", "durable_teams/client/connection.py",
     "Connecting to Temporal as our clients and workers do (pydantic on the wire, the codec, tracing).",
     ["TASK_QUEUE", "NAMESPACE", "default_address", "connect", "encrypted"]),
    ("durable_teams/devserver.py", "durable_teams/client/server_address.py",
     "Where the Temporal server is: the embedded dev server's host and ports, from the environment.",
     ["DEFAULT_PORT", "DEFAULT_HOST", "configured_port", "configured_ui_port",
      "configured_codec_port", "_port_setting", "port_open"]),
    # into reading.py, which then moves to client/server_state.py
    ("durable_teams/chat.py", "durable_teams/reading.py", "", ["why_it_failed"]),
]

PACKAGE_DOCS: dict[str, str] = {
    "client": "Talking to conversations: connect, start, send turns and replies, follow events, read state. No worker code.",
    "worker": "Building and running workers: the activities' host, its converters, the scripted model, the dev server.",
    "cli": "The `durable-teams` command line.",
    "teams": "Defining teams: the builders, their checks, MCP server declarations, the graph.",
    "live": "Live tokens: a model's text deltas between the worker and readers, outside history.",
    "encryption": "Keeping secrets: the payload codec, its server for the Web UI, redaction of logs.",
    "tracing": "OpenTelemetry traces and metrics of conversations.",
}

# strings that look like module paths but are names on the wire (span attributes, provider names)
PROTECTED = ['"durable_teams.mcp.server"', '"gen_ai.provider.name": "durable_teams.scripted"',
             "`durable_teams.scripted`.)"]

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg"}
TEXT_NAMES = {"Dockerfile", "docker-compose.yml", "run"}


def dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def module_map() -> dict[str, str]:
    """Old dotted module -> new one (the root folders are `durable_teams.workflows` etc.)."""
    out = {}
    for old, new in MOVES.items():
        old_mod, new_mod = dotted(old), dotted(new)
        if not old.startswith("durable_teams/"):
            old_mod, new_mod = "durable_teams." + old_mod, "durable_teams." + new_mod
        out[old_mod] = new_mod
    return out


def symbol_map() -> dict[tuple[str, str], str]:
    """(old module, name) -> new module, for the names SPLITS move."""
    mods = module_map()
    return {(dotted(src), name): mods.get(dotted(dst), dotted(dst))
            for src, dst, _, names in SPLITS for name in names}


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def ruff(*args: str) -> None:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    subprocess.run([exe, *args], cwd=ROOT, check=False, capture_output=True)


# --- 1. splits -------------------------------------------------------------------------------

def _segments(tree: ast.Module, lines: list[str], names: set[str]) -> list[tuple[str, int, int]]:
    """Line ranges (0-based, end exclusive) of the top-level definitions named, each with the
    comment lines just above it and an attribute docstring just below it."""
    body = tree.body
    out = []
    for i, node in enumerate(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        else:
            continue
        if name not in names:
            continue
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        end = node.end_lineno or node.lineno
        nxt = body[i + 1] if i + 1 < len(body) else None
        if (nxt is not None and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str) and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)):
            end = nxt.end_lineno or end
        out.append((name, start, end))
    return out


def split(src: str, dst: str, doc: str, names: list[str]) -> None:
    src_path, dst_path = ROOT / src, ROOT / dst
    text = src_path.read_text()
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    found = _segments(tree, lines, set(names))
    segments: list[tuple[int, int]] = []
    for _, s, e in sorted(found, key=lambda f: f[1]):  # neighbours stay together, as they were
        if segments and not "".join(lines[segments[-1][1]:s]).strip():
            segments[-1] = (segments[-1][0], e)
        else:
            segments.append((s, e))
    missing = set(names) - {n for n, _, _ in found}
    if missing:
        raise SystemExit(f"{src}: cannot find {sorted(missing)}")
    moved = "\n\n".join("".join(lines[s:e]).strip("\n") + "\n" for s, e in segments)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
               and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
    header = "".join("".join(lines[n.lineno - 1:n.end_lineno]) for n in imports
                     if not (isinstance(n, ast.ImportFrom) and n.module == dotted(dst)))
    keep = [line for i, line in enumerate(lines) if not any(s <= i < e for s, e in segments)]
    remaining = re.sub(r"\n{4,}", "\n\n\n", "".join(keep))
    used = [n for n in names if re.search(rf"\b{n}\b", remaining)]
    new_mod = dotted(dst)
    if used:  # the old module still uses some of what moved: import it from its new place
        last = max(n.end_lineno or n.lineno for n in imports)
        rest = remaining.splitlines(keepends=True)
        at = next(i for i, line in enumerate(rest) if line == lines[last - 1]) + 1
        rest.insert(at, f"from {new_mod} import {', '.join(used)}\n")
        remaining = "".join(rest)
    src_path.write_text(remaining)
    if dst_path.exists():  # into an existing module: its imports gain the source's
        existing = dst_path.read_text()
        dst_tree = ast.parse(existing)
        last = max(n.end_lineno or n.lineno for n in dst_tree.body if isinstance(n, ast.Import | ast.ImportFrom))
        ex_lines = existing.splitlines(keepends=True)
        dst_path.write_text("".join(ex_lines[:last]) + header + "".join(ex_lines[last:]).rstrip("\n")
                            + "\n\n\n" + moved)
    else:
        dst_path.parent.mkdir(parents=True, exist_ok=True)
        dst_path.write_text(f'"""{doc}"""\n\nfrom __future__ import annotations\n\n{header}\n\n{moved}')
    git("add", str(dst_path.relative_to(ROOT)))
    ruff("check", "--fix", "--select", "F401,I001", str(src_path), str(dst_path))


# --- 2. moves --------------------------------------------------------------------------------

def move_files() -> None:
    for old, new in MOVES.items():
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    for package, doc in PACKAGE_DOCS.items():
        init = ROOT / "durable_teams" / package / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{doc}"""\n')
            git("add", str(init.relative_to(ROOT)))


# --- 3. references ---------------------------------------------------------------------------

def _alternation(keys: list[str]) -> str:
    return "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))


def rewrite_from_imports(text: str, symbols: dict[tuple[str, str], str], mods: dict[str, str]) -> str:
    """`from OLD import a, b` where some names moved elsewhere: one statement per new module."""
    olds = sorted({m for m, _ in symbols})
    pattern = re.compile(rf"^(?P<indent>[ \t]*)from (?P<mod>{_alternation(olds)}) import "
                         r"(?P<names>\([^)]*\)|[^\n]*)$", re.M)

    def repl(m: re.Match[str]) -> str:
        names = [n.strip() for n in m["names"].strip("()").replace("\n", " ").split(",") if n.strip()]
        groups: dict[str, list[str]] = {}
        for item in names:
            target = symbols.get((m["mod"], item.split(" as ")[0].strip()), mods.get(m["mod"], m["mod"]))
            groups.setdefault(target, []).append(item)
        return "\n".join(f"{m['indent']}from {mark(mod)} import {', '.join(items)}"
                         for mod, items in groups.items())

    return pattern.sub(repl, text)


def rewrite_module_imports(text: str, mods: dict[str, str]) -> str:
    """`from durable_teams import live` -> `from durable_teams.live import hub as live`, and
    `from durable_teams.workflows import mcp as m` -> `...workflows import mcp_tools as m`."""
    pattern = re.compile(r"^(?P<indent>[ \t]*)from (?P<parent>durable_teams(?:\.\w+)*) import "
                         r"(?P<names>[\w ,]+)$", re.M)

    def repl(m: re.Match[str]) -> str:
        items = [i.strip() for i in m["names"].split(",") if i.strip()]
        if not any(f"{m['parent']}.{i.split(' as ')[0].strip()}" in mods for i in items):
            return m[0]
        groups: dict[str, list[str]] = {}
        for item in items:
            name, _, alias = (part.strip() for part in item.partition(" as "))
            new = mods.get(f"{m['parent']}.{name}")
            if new is None:
                groups.setdefault(m["parent"], []).append(item)
                continue
            parent, _, leaf = new.rpartition(".")
            alias = alias or name
            groups.setdefault(parent, []).append(leaf if alias == leaf else f"{leaf} as {alias}")
        return "\n".join(f"{m['indent']}from {mark(parent)} import {', '.join(names)}"
                         for parent, names in groups.items())

    return pattern.sub(repl, text)


def rewrite_relative(text: str, renamed: dict[str, str]) -> str:
    """Relative imports of renamed siblings (inside workflows/ or activities/)."""
    for old, new in renamed.items():
        text = re.sub(rf"^(\s*from \.){old}( import )", rf"\g<1>{new}\g<2>", text, flags=re.M)

        def sibling(m: re.Match[str], old: str = old, new: str = new) -> str:
            items = [i.strip() for i in m["names"].split(",")]
            items = [f"{new} as {old}" if i == old else i for i in items]
            return f"{m['head']}{', '.join(items)}"

        text = re.sub(rf"^(?P<head>\s*from \. import )(?P<names>.*\b{old}\b.*)$", sibling, text, flags=re.M)
    return text


def old_modules(mods: dict[str, str]) -> str:
    """An old module's path, unless it is already the start of a new one's
    (`durable_teams.client.connection` is new; `durable_teams.client` was client.py)."""
    news = set(mods.values()) | {dotted(dst) for _, dst, _, _ in SPLITS}
    parts = []
    for old in sorted(mods, key=len, reverse=True):
        children = sorted(n[len(old) + 1:].split(".")[0] for n in news if n.startswith(old + "."))
        guard = rf"(?!\.(?:{'|'.join(children)})\b)" if children else ""
        parts.append(re.escape(old) + guard)
    return "|".join(parts)


def mark(name: str) -> str:
    """A rewritten name, kept from the passes after the one that wrote it."""
    return f"\x01{name}\x02"


def rewrite_text(text: str, path: Path) -> str:
    mods, symbols = module_map(), symbol_map()
    for i, s in enumerate(PROTECTED):
        text = text.replace(s, f"\0{i}\0")
    if path.suffix == ".py":
        text = rewrite_from_imports(text, symbols, mods)
        text = rewrite_module_imports(text, mods)
    # "name": "module" tables (the public API's) follow the name
    table = re.compile(rf'"(?P<name>\w+)": "(?P<mod>{_alternation([m for m, _ in symbols])})"')
    text = table.sub(lambda m: f'"{m["name"]}": "{mark(symbols.get((m["mod"], m["name"]), mods.get(m["mod"], m["mod"])))}"', text)
    # dotted names: module.attribute for split names first, then whole modules
    attr = re.compile(rf"(?<![\w.\x01])(?P<mod>{_alternation([m for m, _ in symbols])})\.(?P<name>\w+)\b")
    text = attr.sub(lambda m: f"{mark(symbols[(m['mod'], m['name'])])}.{m['name']}"
                    if (m["mod"], m["name"]) in symbols else m[0], text)
    whole = re.compile(rf"(?<![\w.\x01])(?P<mod>{old_modules(mods)})(?![\w])")
    text = whole.sub(lambda m: mods[m["mod"]], text)
    # file paths in docs and comments
    paths = re.compile(rf"(?<![\w.])(?P<path>{_alternation(list(MOVES))})")
    text = paths.sub(lambda m: MOVES[m["path"]], text)
    for i, s in enumerate(PROTECTED):
        text = text.replace(f"\0{i}\0", s)
    return text.replace("\x01", "").replace("\x02", "")


def text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    out = []
    for name in filter(None, listed.stdout.decode().split("\0")):
        path = ROOT / name
        if path.is_symlink() or not path.is_file() or name.startswith("tools/restructure"):
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            out.append(path)
    return out


def rewrite_all() -> None:
    renamed: dict[str, dict[str, str]] = {"workflows": {}, "activities": {}}
    for old, new in MOVES.items():
        folder = old.split("/")[0]
        if folder in renamed:
            renamed[folder][Path(old).stem] = Path(new).stem
    for path in text_files():
        text = path.read_text()
        new = rewrite_text(text, path)
        folder = path.parts[len(ROOT.parts)]
        if path.suffix == ".py" and folder in renamed:
            new = rewrite_relative(new, renamed[folder])
        if path.suffix == ".py" and path.parts[len(ROOT.parts)] == "durable_teams":
            new = absolute_relative(new, path)
        if new != text:
            path.write_text(new)


def absolute_relative(text: str, path: Path) -> str:
    """`from .x import` inside durable_teams/ (outside the linked folders) becomes absolute."""
    package = ".".join(path.relative_to(ROOT).parent.parts)
    return re.sub(r"^(\s*from )\.(\w+)( import )", lambda m: f"{m[1]}{package}.{m[2]}{m[3]}", text, flags=re.M)


# --- 4. packaging ----------------------------------------------------------------------------

def package_list() -> None:
    path = ROOT / "pyproject.toml"
    text = path.read_text()
    new = ", ".join(f'"durable_teams.{p}"' for p in PACKAGE_DOCS)
    text = text.replace('"durable_teams.gateway"]', f'"durable_teams.gateway",\n            {new}]', 1)
    path.write_text(text)


def main() -> None:
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    if status.stdout.strip() and "--dirty" not in sys.argv:
        raise SystemExit("the work tree has changes: commit or stash them first")
    # relative imports are made absolute before anything moves (their meaning depends on the folder)
    for path in (ROOT / "durable_teams").glob("*.py"):
        path.write_text(absolute_relative(path.read_text(), path))
    for src, dst, doc, names in SPLITS:
        split(src, dst, doc, names)
    move_files()
    rewrite_all()
    package_list()
    ruff("check", "--fix", "--select", "I001", ".")
    git("add", "-A", "durable_teams", "workflows", "activities", "tests", "bench", "docs")
    git("add", "-u")


if __name__ == "__main__":
    main()
