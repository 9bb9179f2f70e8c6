"""How the CLI writes a memory namespace (a tuple of labels) as one word, both ways, so that any
label round-trips: the labels joined by `/`, a `/` inside a label written `\\/` and a backslash
`\\\\` (`("users", "org/alice")` is `users/org\\/alice`); or a JSON list (`--namespace`).
An empty label (a leading, trailing or doubled `/`) is refused, never dropped."""

from __future__ import annotations

import json

from durable_teams.memory.store import Namespace

ESCAPES = {"/": "/", "\\": "\\"}


class UsageError(ValueError):
    """A command line the store cannot use."""


def namespace_text(namespace: Namespace) -> str:
    """The namespace as the CLI writes it (what `parse_namespace` reads back)."""
    return "/".join(label.replace("\\", "\\\\").replace("/", "\\/") for label in namespace)


def parse_namespace(text: str, *, allow_empty: bool = False) -> Namespace:
    """`users/org\\/alice` -> ("users", "org/alice"); "" is the whole store when allowed."""
    if not text:
        if allow_empty:
            return ()
        raise UsageError("give a namespace, its labels joined by '/' (e.g. users/u-42/memories)")
    labels, label, chars = [], [], iter(text)
    for char in chars:
        if char == "\\":
            escaped = ESCAPES.get(next(chars, ""))
            if escaped is None:
                raise UsageError(f"namespace {text!r}: inside a label write \\/ for '/' and \\\\ for a "
                                 "backslash (or give the labels as a JSON list with --namespace)")
            label.append(escaped)
        elif char == "/":
            labels.append("".join(label))
            label = []
        else:
            label.append(char)
    labels.append("".join(label))
    if "" in labels:
        raise UsageError(f"namespace {text!r} has an empty label (a leading, trailing or doubled "
                         "'/'): write its labels joined by '/', e.g. users/u-42/memories")
    return tuple(labels)


def namespace_json(text: str, *, allow_empty: bool = False) -> Namespace:
    """--namespace's JSON list of labels."""
    try:
        labels = json.loads(text)
    except ValueError:
        labels = None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels) or (
            not labels and not allow_empty):
        raise UsageError(f"--namespace must be a JSON list of strings, e.g. '[\"users\", \"org/alice\"]'"
                         f", not {text!r}")
    return tuple(labels)
