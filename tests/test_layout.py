"""The package's layout (docs/architecture.md): which way imports point, one name per module,
one import path per file, one table for the public API."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable_teams

pytestmark = [pytest.mark.pure, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "durable_teams"

ALLOWED: dict[str, set[str]] = {
    # layer (a folder) -> the layers its modules may import (besides its own)
    "workflows": set(),  # deterministic: nothing of ours from outside itself
    "activities": {"workflows", "teams", "live", "encryption", "memory"},
    # tools declare the store's type (memory/store.py, pure) to have it injected
    "teams": {"workflows", "memory"},
    # the store and its backends; its built-in tools are @tool functions
    "memory": {"workflows", "teams"},
    "client": {"workflows", "encryption", "live", "tracing"},
    # the LangGraph door's store endpoints read and write the teams' memory store
    "gateway": {"workflows", "client", "live", "memory"},
    "live": {"encryption"},
    "encryption": {"client"},  # the dev server's address, for the codec server's origins
    "tracing": {"workflows", "activities"},
    "worker": {"workflows", "activities", "teams", "client", "live", "encryption", "examples", "memory"},
    "examples": {"teams", "worker"},
    # replaying recorded conversations against a candidate: a worker of its own, driven as a client
    "replay": {"workflows", "activities", "teams", "client", "worker", "live", "memory"},
}
"""The CLI and the package's `__init__` may import anything."""


def layer_of(path: Path) -> str:
    top = path.relative_to(PACKAGE).parts
    return top[0] if len(top) > 1 else "root"


def our_imports(path: Path) -> list[str]:
    """Every absolute `durable_teams.*` module a file imports, at any depth (lazy ones too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return [m for m in found if m.startswith("durable_teams.")]


def sources() -> list[Path]:
    """Our modules, each once: everything lives inside the package."""
    return sorted(PACKAGE.rglob("*.py"))


def test_one_tree_every_tool_sees() -> None:
    """The code lives in the package and nowhere else: the root names of the design card
    (workflows/, activities/) are links into it, so a search that does not follow links (grep
    -r, find, an editor's index) sees every module once, under durable_teams/."""
    for name in ("workflows", "activities"):
        link = ROOT / name
        assert link.is_symlink() and link.resolve() == PACKAGE / name, name
        assert not (PACKAGE / name).is_symlink(), name
    walked = sorted(p for p in PACKAGE.rglob("*.py"))
    followed = sorted({p.resolve() for p in PACKAGE.glob("**/*.py")})
    assert [p.resolve() for p in walked] == followed


def test_imports_point_the_allowed_way() -> None:
    wrong = []
    for path in sources():
        layer = layer_of(path)
        if layer not in ALLOWED:
            continue
        for module in our_imports(path):
            target = module.split(".")[1]
            detail = ".".join(module.split(".")[1:3])
            if target != layer and target not in ALLOWED[layer] and detail not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert wrong == []


def test_the_architecture_page_states_these_rules() -> None:
    """docs/architecture.md's table of which layer may import which is `ALLOWED`."""
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    table = page[page.index("| Layer | May import |"):].split("\n\n")[0].splitlines()[2:]
    stated = {}
    for row in table:
        layer, allowed = (cell.strip() for cell in row.strip("|").split("|"))
        stated[layer.strip("`")] = {word.strip("`,") for word in allowed.split("(")[0].split() if word.startswith("`")}
    assert stated == ALLOWED


def loaded_by(*modules: str) -> set[str]:
    """The modules a fresh interpreter holds after importing `modules`."""
    probe = f"import sys; import {', '.join(modules)}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def under(loaded: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_a_client_or_gateway_process_loads_no_worker_side() -> None:
    """Starting conversations, reading them and serving the gateway need neither the worker's
    code nor the openai client."""
    client = [f"durable_teams.client.{p.stem}" for p in (PACKAGE / "client").glob("*.py") if p.stem != "__init__"]
    gateway = ["durable_teams.gateway.asgi", "durable_teams.gateway.core.threads",
               "durable_teams.gateway.doors.openai_chat.door"]
    loaded = loaded_by("durable_teams.client", *client, *gateway)
    assert "durable_teams.gateway.asgi" in loaded and "durable_teams.client.start" in loaded
    assert under(loaded, "openai", "durable_teams.worker", "durable_teams.activities",
                 "durable_teams.cli", "durable_teams.teams") == []


def test_defining_teams_loads_no_model_client_no_activity_and_no_worker() -> None:
    loaded = loaded_by("durable_teams.teams.builders", "durable_teams.teams.graph",
                       "durable_teams.teams.mcp_servers", "durable_teams.teams.tools")
    assert under(loaded, "openai", "durable_teams.worker", "durable_teams.cli", "durable_teams.client",
                 "durable_teams.activities", "temporalio.worker") == []


def test_the_package_root_holds_only_its_entry_points() -> None:
    """Every module lives in the folder of its role (docs/architecture.md)."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


DOORS = PACKAGE / "gateway" / "doors"
"""The gateway's doors: one subpackage per protocol (docs/architecture.md)."""


def door_of(path: Path) -> str | None:
    """The door a module belongs to (`a2a` for gateway/doors/a2a/door.py), None outside the doors."""
    return path.relative_to(DOORS).parts[0] if path.is_relative_to(DOORS) and path.parent != DOORS else None


def test_no_two_modules_share_a_file_name() -> None:
    """One name per module, but a door's modules are named within their door: `a2a/door.py`
    and `mcp/door.py` are each their protocol's door."""
    def named(path: Path) -> str:
        door = door_of(path)
        return f"{door}/{path.name}" if door else path.name
    names = Counter(named(p) for p in sources() if p.name not in ("__init__.py", "__main__.py"))
    assert [name for name, count in names.items() if count > 1] == []


def named_imports(path: Path) -> list[str]:
    """`our_imports`, with the names a `from package import name` takes (`...doors.a2a` for
    `from durable_teams.gateway.doors import a2a`)."""
    found = our_imports(path)
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("durable_teams."):
            found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def test_doors_never_import_each_other() -> None:
    """A door is an adapter over the gateway's core: it imports the core (and the layers below
    the gateway), never another door nor the app that mounts it (asgi.py), so a new door is a folder that
    touches no other one. The core imports no door."""
    wrong = []
    for path in sources():
        door = door_of(path)
        if door is None and not path.is_relative_to(PACKAGE / "gateway" / "core"):
            continue
        for module in named_imports(path):
            parts = module.split(".")
            if parts[1:3] == ["gateway", "asgi"] or parts[1:3] == ["gateway", "doors"] and door is None:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
            elif parts[1:3] == ["gateway", "doors"] and len(parts) > 3 and parts[3] != door:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert wrong == []


FACADES = ["durable_teams", "durable_teams.teams", "durable_teams.client", "durable_teams.worker",
           "durable_teams.encryption", "durable_teams.memory", "durable_teams.workflows",
           "durable_teams.replay"]
"""The package and its documented submodules: each names its public API in one table."""


@pytest.mark.parametrize("name", FACADES)
def test_the_public_api_is_one_table(name: str) -> None:
    """`__all__` is the table's keys, what type checkers see (the TYPE_CHECKING imports)
    names the same objects from the same modules, and every name resolves."""
    facade = importlib.import_module(name)
    assert facade.__all__ == sorted(facade._EXPORTS)
    init = PACKAGE.joinpath(*name.split(".")[1:], "__init__.py")
    tree = ast.parse(init.read_text("utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    typed = {a.name: n.module for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert typed == facade._EXPORTS
    for public in facade.__all__:
        assert getattr(facade, public) is getattr(importlib.import_module(facade._EXPORTS[public]), public)


def test_one_name_per_concept() -> None:
    """A name means one object wherever it is exported (`connect` at the package and in
    `durable_teams.client` is the same function), and the package's own API stays small:
    what a team author and a client need (docs/architecture.md lists the rest)."""
    homes: dict[str, set[str]] = {}
    for name in FACADES:
        for public, module in importlib.import_module(name)._EXPORTS.items():
            homes.setdefault(public, set()).add(module)
    assert {public: modules for public, modules in homes.items() if len(modules) > 1} == {}
    assert len(durable_teams.__all__) <= 12


def test_ruff_bans_the_root_folders_by_their_root_names() -> None:
    """One import path per file: `import workflows.messages` would load a second copy of every
    class beside `durable_teams.workflows.messages`; ruff refuses it anywhere, tests included."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    sample = ("import workflows.messages\nfrom activities.tools import tool\nimport worker\n"
              "from durable_teams.workflows import messages\n")
    out = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise",
                          "--stdin-filename", "tests/test_sample.py", "-"],
                         input=sample, cwd=ROOT, capture_output=True, text=True)
    banned = [line for line in out.stdout.splitlines() if "TID251" in line]
    assert [line.split(":")[1] for line in banned] == ["1", "2", "3"], out.stdout


def module_path(name: str) -> Path | None:
    """The file of a `durable_teams.*` module."""
    base = PACKAGE.joinpath(*name.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(path: Path) -> set[Path]:
    """The files of ours `path` imports anywhere in it (functions and TYPE_CHECKING blocks
    too), relative imports included."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("durable_teams.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("durable_teams."):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            here = path.parent
            targets = [node.module] if node.module else [a.name for a in node.names]
            found |= {here / f"{t}.py" for t in targets if t and (here / f"{t}.py").is_file()}
        found |= {p for p in map(module_path, names) if p is not None}
    return found - {path}


def test_no_import_cycles_not_even_lazy_ones() -> None:
    """No module of ours imports one that imports it back, however indirectly, counting imports
    inside functions and `TYPE_CHECKING` blocks (the package's `__init__`, a table of lazy
    exports, aside)."""
    files = [p for p in sources() if p != PACKAGE / "__init__.py" and p.name != "__init__.py"]
    graph = {p: {q for q in imported_files(p) if q in files} for p in files}
    cycles = []
    state: dict[Path, int] = {}  # 1: on the path, 2: done

    def visit(node: Path, path: list[Path]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([p.relative_to(ROOT).as_posix() for p in path[path.index(nxt):] + [nxt]])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(files):
        if start not in state:
            visit(start, [start])
    assert cycles == []


DOOR_WORDS = re.compile(r"a2a|langgraph|openai|responses", re.IGNORECASE)
"""The doors' names, as they would show in the workflow's vocabulary (`mcp` aside: a team's
agents call MCP servers' tools, a word of the team's own; so is a model's `response`)."""
DOOR_LIBRARIES = {"a2a", "mcp", "mcp_types", "openai", "langgraph", "langgraph_sdk", "starlette", "fastapi"}
WORKFLOWS = PACKAGE / "workflows"


def doors_own_workflows() -> set[str]:
    """The modules of workflows/ that the worker runs for a door, never `TeamWorkflow`, as
    docs/architecture.md names them (the bullet that begins "`workflows/` speaks")."""
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    bullet = page[page.index("- `workflows/` speaks"):].split("\n- ")[0]
    owned = bullet[bullet.index("the doors' own"):].split(":")[0]
    return set(re.findall(r"`(\w+\.py)`", owned))


def public_names(path: Path) -> list[str]:
    """A module's public identifiers: its top-level names and its classes' members."""
    names: list[str] = []

    def of(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
                if isinstance(node, ast.ClassDef):
                    of(node.body)
            elif isinstance(node, ast.Assign):
                names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.append(node.target.id)
    of(ast.parse(path.read_text("utf-8")).body)
    return [name for name in names if not name.startswith("_")]


def test_workflows_speak_the_teams_language() -> None:
    """No module of workflows/ imports a door's library, and none but the doors' own workflows
    has a door's name in its file name or public identifiers; the team's modules never import
    the doors' own (docs/architecture.md)."""
    owned = doors_own_workflows()
    assert owned and all((WORKFLOWS / name).is_file() for name in owned), owned
    wrong = []
    for path in sorted(WORKFLOWS.glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        libraries = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
            (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        wrong += [f"{path.name} imports {lib}" for lib in sorted(libraries & DOOR_LIBRARIES)]
        if path.name in owned:
            continue
        wrong += [f"{path.name} names {name}" for name in [path.stem, *public_names(path)] if DOOR_WORDS.search(name)]
        wrong += [f"{path.name} imports {target.name}" for target in imported_files(path) if target.name in owned
                  and target.parent == WORKFLOWS]
    assert wrong == []


HANDLER_DOOR_WORDS = re.compile(r"a2a|langgraph|openai|mcp|response", re.IGNORECASE)
"""A door's name in a query, update or signal (stricter than `DOOR_WORDS`: no handler of the
team's is about MCP or a response)."""
REPLAYED_NAMES = {"delete_response": "hide_step"}
"""Wire names kept only so recorded conversations replay (and gateways of the release that
sent them still work), with the handler each now is: `hide_step`'s first name."""


def test_the_team_workflows_queries_updates_and_signals_say_no_door_name() -> None:
    """What a client sends a conversation and reads from it is in the team's words, whichever
    door it came through; a name a door gave is kept only for replay, as another name of a
    handler whose own name is the team's."""
    from temporalio import workflow as temporal

    from durable_teams.workflows.conversation import TeamWorkflow

    definition = temporal._Definition.must_from_class(TeamWorkflow)
    handlers = {kind: {name: getattr(d.fn, "__name__", "") for name, d in table.items() if name}
                for kind, table in (("query", definition.queries), ("update", definition.updates),
                                    ("signal", definition.signals))}
    named = [(kind, wire, method) for kind, table in handlers.items() for wire, method in table.items()
             if HANDLER_DOOR_WORDS.search(wire) or HANDLER_DOOR_WORDS.search(method)]
    assert named == [("update", wire, f"legacy_{now}") for wire, now in REPLAYED_NAMES.items()]
    assert all(now in handlers["update"] for now in REPLAYED_NAMES.values())
    assert len(handlers["query"]) >= 10 and "submit_turn" in handlers["update"]  # the walk saw them


MODULE_LINES = 300
FUNCTION_LINES = 50
"""The house's sizes (docs/architecture.md): a module over 300 lines or a function over 50
(its decorators aside, its docstring and nested functions counted) asks to be split by
responsibility."""
OVERSIZE: dict[str, str] = {
    # module or module:function -> why it stays over the limit (split it, then delete its line)
}


def oversize() -> list[str]:
    """Every module of durable_teams/ over `MODULE_LINES` and function over `FUNCTION_LINES`."""
    found = []
    for path in sources():
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text("utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            found.append(name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    (node.end_lineno or node.lineno) - node.lineno + 1 > FUNCTION_LINES):
                found.append(f"{name}:{node.name}")
    return found


def test_modules_and_functions_stay_small() -> None:
    """No module over 300 lines and no function over 50, but the few the allow-list names,
    each with its reason; an entry that is small again must leave the list."""
    found = oversize()
    assert sorted(set(found) - set(OVERSIZE)) == []
    assert sorted(set(OVERSIZE) - set(found)) == []
