"""`durable-teams memory`: read and edit the memory store the workers use (the same
DURABLE_TEAMS_MEMORY setting, or --store), without a Temporal server.

    durable-teams memory put users/u-42/memories favorite_color '{"text": "blue"}'
    durable-teams memory list users/u-42 --query "favorite color"
    durable-teams memory get users/u-42/memories favorite_color
    durable-teams memory put users/u-42/memories notes --value-file notes.json   # - for stdin
    durable-teams memory put 'users/org\\/alice/memories' city '{"text": "Lyon"}'
    durable-teams memory get --namespace '["users", "org/alice", "memories"]' city
    durable-teams memory list users --json               # one JSON object per item
    durable-teams memory delete users/u-42/memories favorite_color
    durable-teams memory delete users/u-42 --prefix      # forget everything about a user

A namespace is written as its labels joined by `/`; inside a label write `\\/` for a `/` and
`\\\\` for a backslash (what `list` prints is written that way), or give the labels as a JSON
list with --namespace. Errors are one line, never a traceback. A store file named by --store
or DURABLE_TEAMS_MEMORY must be in an existing folder (no command makes one); reading never
makes the file, the first `put` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from durable_teams.cli.namespace_syntax import (
    UsageError,
    namespace_json,
    namespace_text,
    parse_namespace,
)
from durable_teams.memory.postgres_store import safe_dsn
from durable_teams.memory.sqlite_store import SQLiteStore
from durable_teams.memory.store import Namespace, Store, StoreError
from durable_teams.memory.store_config import open_store

STORE_HELP = ("the store's URL: sqlite:///path/file.sqlite3 (in an existing folder), "
              "postgresql://user:password@host/db or memory: (default: $DURABLE_TEAMS_MEMORY, else "
              "the SQLite file beside the dev server's state)")
NAMESPACE_HELP = ("the namespace as a JSON list of labels, for labels holding '/' or '\\': "
                  "'[\"users\", \"org/alice\"]' (instead of NAMESPACE)")
SLASHED = "its labels joined by '/' (\\/ for a '/' inside a label), e.g. users/u-42/memories"


def json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise UsageError(f"{what} is not JSON ({err})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, e.g. '{{\"text\": \"blue\"}}'")
    return value


def subcommand(sub: Any, name: str, summary: str, description: str, usage: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=description, usage=usage)
    command.add_argument("--store", default=argparse.SUPPRESS, help=STORE_HELP)
    command.add_argument("--namespace", metavar="JSON", dest="namespace_json", help=NAMESPACE_HELP)
    return command


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams memory", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", help=STORE_HELP)
    sub = p.add_subparsers(dest="action", required=True, metavar="action")
    listing = subcommand(
        sub, "list", "items under a namespace prefix, newest or most relevant first",
        "List the items whose namespace starts with PREFIX (label by label: users/u1 is not a prefix "
        "of users/u10), newest first; with --query, the items holding the query's words (or, with "
        "embeddings configured, the closest in meaning), most relevant first. One line per item: "
        "namespace, key, value. When nothing matches, one line on stderr says so (exit 0).",
        "durable-teams memory list [PREFIX | --namespace JSON] [--query WORDS] [--filter JSON] "
        "[--limit N] [--json]")
    listing.add_argument("prefix", nargs="?", metavar="PREFIX",
                         help=f"a namespace or its start, {SLASHED}; leave out for the whole store")
    listing.add_argument("--query", metavar="WORDS", help="rank by these words: a key or text "
                         "holding favorite_color is found by 'color' (by meaning, with embeddings)")
    listing.add_argument("--filter", metavar="JSON",
                         help="a JSON object the values must match, field by field: '{\"lang\": \"fr\"}'")
    listing.add_argument("--limit", type=int, default=20, metavar="N", help="at most N items (default 20)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    get = subcommand(sub, "get", "print one item's value as JSON",
                     "Print the value of the item KEY in NAMESPACE as JSON (exit 1 when there is none).",
                     "durable-teams memory get (NAMESPACE | --namespace JSON) KEY")
    get.add_argument("namespace", nargs="?", metavar="NAMESPACE", help=f"the item's namespace, {SLASHED}")
    get.add_argument("key", nargs="?", metavar="KEY", help="the item's key")
    put = subcommand(sub, "put", "create or replace an item",
                     "Create the item KEY in NAMESPACE, or replace its value.",
                     "durable-teams memory put (NAMESPACE | --namespace JSON) KEY "
                     "(VALUE | --value-file PATH)")
    put.add_argument("namespace", nargs="?", metavar="NAMESPACE", help=f"the item's namespace, {SLASHED}")
    put.add_argument("key", nargs="?", metavar="KEY", help="the item's key")
    put.add_argument("value", nargs="?", metavar="VALUE", help="a JSON object, e.g. '{\"text\": \"blue\"}'")
    put.add_argument("--value-file", metavar="PATH",
                     help="read the JSON object from this file (- for stdin) instead of VALUE")
    delete = subcommand(sub, "delete", "delete an item, or with --prefix every item under a namespace",
                        "Delete the item KEY in NAMESPACE, or with --prefix every item whose "
                        "namespace starts with NAMESPACE.",
                        "durable-teams memory delete (NAMESPACE | --namespace JSON) (KEY | --prefix)")
    delete.add_argument("namespace", nargs="?", metavar="NAMESPACE", help=f"the namespace, {SLASHED}")
    delete.add_argument("key", nargs="?", metavar="KEY", help="the item's key")
    delete.add_argument("--prefix", action="store_true", help="delete every item whose namespace starts "
                        "with NAMESPACE (how a team forgets a user)")
    return p


def operands(args: argparse.Namespace, *names: str) -> tuple[Namespace | None, list[str | None]]:
    """The namespace and the named operands: with --namespace, the words given are the operands
    after NAMESPACE (argparse cannot tell, so they are shifted here)."""
    first = "prefix" if args.action == "list" else "namespace"
    given = [w for w in (getattr(args, n) for n in (first, *names)) if w is not None]
    if args.namespace_json is not None:
        namespace: Namespace | None = namespace_json(args.namespace_json, allow_empty=args.action == "list")
    elif given:
        namespace = parse_namespace(given.pop(0), allow_empty=args.action == "list")
    else:
        namespace = None
    if len(given) > len(names):
        raise UsageError(f"unexpected {given[len(names)]!r}" + (" (the namespace is given by --namespace)"
                                                                if args.namespace_json is not None else ""))
    return namespace, given + [None] * (len(names) - len(given))


def required(namespace: Namespace | None) -> Namespace:
    if namespace is None:
        raise UsageError(f"give a namespace: {SLASHED}, or --namespace JSON")
    return namespace


def read_value(args: argparse.Namespace, value: str | None) -> dict[str, Any]:
    if (value is None) == (args.value_file is None):
        raise UsageError("give the value once: a JSON object as VALUE, or --value-file PATH (- for stdin)")
    if value is not None:
        return json_object(value, "the value")
    try:
        text = sys.stdin.read() if args.value_file == "-" else Path(args.value_file).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read --value-file {args.value_file}: "
                         f"{getattr(err, 'strerror', None) or err}") from None
    return json_object(text, f"--value-file {args.value_file}")


async def run(args: argparse.Namespace, store: Store) -> int | str:
    if args.action == "list":
        prefix, _ = operands(args)
        return await list_items(args, store, prefix or ())
    if args.action == "get":
        namespace, (key,) = operands(args, "key")
        if key is None:
            raise UsageError("give the key of the item to print")
        got = await store.get(required(namespace), key)
        if got is None:
            return (f"durable-teams memory: no item {key!r} in {namespace_text(required(namespace))}"
                    + await lookalike(store, required(namespace)))
        print(json.dumps(got.value, ensure_ascii=False, indent=2))
        return 0
    if args.action == "put":
        namespace, (key, value) = operands(args, "key", "value")
        if key is None:
            raise UsageError("give the item's key, then its value")
        await store.put(required(namespace), key, read_value(args, value))
        print(f"Stored {key} in {namespace_text(required(namespace))}.")
        return 0
    return await delete(args, store)


async def list_items(args: argparse.Namespace, store: Store, prefix: Namespace) -> int:
    wanted = json_object(args.filter, "--filter") if args.filter else None
    found = await store.search(prefix, query=args.query, filter=wanted, limit=args.limit)
    for item in found:
        if args.json:
            print(json.dumps(item.as_json(), ensure_ascii=False))
        else:
            print(f"{namespace_text(item.namespace)}  {item.key}  {json.dumps(item.value, ensure_ascii=False)}")
    if not found:
        print(nothing_found(args, store, prefix), file=sys.stderr)
    return 0


def nothing_found(args: argparse.Namespace, store: Store, prefix: Namespace) -> str:
    """The line saying a listing is empty, and why when it can tell."""
    if isinstance(store, SQLiteStore) and not store.exists():
        return f"No items: the store file {store.path} does not exist yet (the first put makes it)."
    where = f"under {namespace_text(prefix)}" if prefix else "in the store"
    tests = ([json.dumps(args.query, ensure_ascii=False)] if args.query and args.query.strip() else []) + (
        [f"--filter {args.filter}"] if args.filter else [])
    return f"No items {where}" + (f" match {' and '.join(tests)}." if tests else ".")


async def lookalike(store: Store, namespace: Namespace) -> str:
    """When nothing is found: a namespace that reads the same with its labels' `/` unescaped
    (`users/org/alice` typed for ("users", "org/alice")), as a hint; else ""."""
    typed = "/".join(namespace)
    for other in await store.namespaces(namespace[:1]):
        for end in range(1, len(other) + 1):
            if other[:end] != namespace and "/".join(other[:end]) == typed:
                return f" (did you mean {namespace_text(other[:end])}? a '/' inside a label is written \\/)"
    return ""


async def delete(args: argparse.Namespace, store: Store) -> int | str:
    namespace, (key,) = operands(args, "key")
    where = namespace_text(required(namespace))
    if args.prefix:
        if key is not None:
            raise UsageError("--prefix deletes a whole namespace: give no key with it")
        gone = await store.delete_prefix(required(namespace))
        print(f"Deleted {gone} item{'s' if gone != 1 else ''} under {where}"
              + (await lookalike(store, required(namespace)) if not gone else "") + ".")
        return 0
    if key is None:
        raise UsageError("give the key to delete, or --prefix to delete everything under the namespace")
    if not await store.delete(required(namespace), key):
        return f"durable-teams memory: no item {key!r} in {where}" + await lookalike(store, required(namespace))
    print(f"Deleted {key} from {where}.")
    return 0


async def run_with_store(args: argparse.Namespace) -> int | str:
    store = open_store(args.store, named_by="--store") if args.store is not None else open_store()
    try:
        return await run(args, store)
    finally:
        await store.close()


def main(argv: Sequence[str]) -> int | str:
    """The exit status, or one line for stderr."""
    args = parser().parse_args(list(argv))
    secret_free = safe_dsn(args.store) if args.store else None
    try:
        return asyncio.run(run_with_store(args))
    except (StoreError, UsageError) as err:
        return f"durable-teams memory: {err}"
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - a database that refused: one line, never a traceback
        text = str(err).strip().splitlines()[0] if str(err).strip() else ""
        if args.store and secret_free and args.store in text:
            text = text.replace(args.store, secret_free)
        return f"durable-teams memory: the store failed ({type(err).__name__}{': ' + text if text else ''})"
