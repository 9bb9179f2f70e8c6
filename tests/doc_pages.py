"""Reading the README and docs/*.md for the doc tests: code blocks (with their not-run marks),
the commands in shell blocks, links and heading anchors."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell"}
CHECKED = SHELL | {"python"}
# The mark for a block that cannot run here, on the line right before its fence.
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # the opening fence's, from 1
    lang: str
    code: str
    not_run: str | None  # the mark's reason ("" for a mark without one); None when unmarked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, indented ones (in list items) included."""
    lines = page.read_text("utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match.groups()
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].strip() == fence), len(lines))
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in lines[i + 1:end]]
        mark = NOT_RUN.match(lines[i - 1]) if i else None
        found.append(Block(page, i + 1, lang.lower(), "\n".join(body) + "\n",
                           mark.group(1).strip() if mark else None))
        i = end + 1
    return found


def all_blocks(langs: set[str] = CHECKED) -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.lang in langs]


def outside_fences(page: Path) -> list[str]:
    """A page's lines that are not in a fenced block."""
    found, fenced = [], None
    for line in page.read_text("utf-8").splitlines():
        match = FENCE.match(line)
        if match and fenced is None:
            fenced = match.group(2)
        elif fenced is not None and line.strip() == fenced:
            fenced = None
        elif fenced is None:
            found.append(line)
    return found


def prose(page: Path) -> str:
    """A page without its fenced blocks and inline code (where links are not links)."""
    return re.sub(r"`[^`\n]*`", "", "\n".join(outside_fences(page)))


def headings(page: Path) -> list[str]:
    """A page's headings, outside code blocks."""
    return [line.lstrip("#").strip() for line in outside_fences(page)
            if re.match(r"^#{1,6} ", line)]


def anchors(page: Path) -> set[str]:
    """The ids mkdocs' toc extension (and GitHub, for these headings) gives a page's headings."""
    from markdown.extensions.toc import slugify

    ids: set[str] = set()
    for title in headings(page):
        plain = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", title)
        slug, n = slugify(plain, "-"), 0
        while (slug if n == 0 else f"{slug}_{n}") in ids:
            n += 1
        ids.add(slug if n == 0 else f"{slug}_{n}")
    return ids


def links(page: Path) -> list[str]:
    """The targets of a page's Markdown links and images, outside code."""
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(page))


@dataclass(frozen=True)
class Command:
    program: tuple[str, ...]  # what to run with --help: ("durable-teams", "run"), ("python", "-m", "bench.scale")
    words: tuple[str, ...]  # what its --help must mention: the long flags used (and a module's mode)


def commands(code: str) -> list[Command]:
    """The durable-teams, `python -m <module of this repository>` and `python worker.py` commands
    of a shell block, with the long flags each uses (comments and continuations handled)."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"<([A-Za-z][\w -]*)>", r"\1", line)  # a placeholder such as <workflow-id>
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # an unbalanced quote: bash -n reports it
            continue
        segment: list[str] = []
        redirected = False
        for token in [*tokens, ";"]:
            if token and set(token) <= set("();|&"):
                found += command_of(segment)
                segment = []
            elif token and set(token) <= set("<>&"):
                redirected = True  # the next word is the redirection's file
            elif redirected:
                redirected = False
            else:
                segment.append(token.strip("[]"))
    return found


WRAPPERS = {"exec", "time", "nohup", "opentelemetry-instrument"}  # run the command after them


def command_of(words: list[str]) -> list[Command]:
    """The command a segment runs, when it is one of ours: the first word after any `NAME=value`
    assignments and wrappers (so `--task-queue durable-teams` is not taken for the CLI)."""
    while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in WRAPPERS):
        words = words[1:]
    if not words:
        return []
    word, rest = words[0], words[1:]
    if word == "durable-teams":
        sub = next((w for w in rest[:1] if not w.startswith("-")), None)
        return [Command(("durable-teams", *([sub] if sub else [])), long_flags(rest))]
    if word in ("python", "python3") and rest[:1] == ["-m"] and len(rest) > 1:
        path = ROOT / Path(*rest[1].split("."))
        if path.with_suffix(".py").exists() or path.is_dir():  # a module of this repository
            mode = [w for w in rest[2:3] if re.match(r"^[a-z][\w-]*$", w)]
            return [Command(("python", "-m", rest[1]), (*mode, *long_flags(rest[2:])))]
    if word in ("python", "python3") and rest[:1] == ["worker.py"]:
        return [Command(("python", "worker.py"), long_flags(rest[1:]))]
    return []


def long_flags(words: list[str]) -> tuple[str, ...]:
    return tuple(w.split("=", 1)[0] for w in words if re.match(r"^--[a-z]", w))
