"""`durable-teams memory`: read and edit the memory store the workers use (the same
DURABLE_TEAMS_MEMORY setting, or --store), without a Temporal server.

    durable-teams memory list users/u-42 [--query "favorite color"] [--filter '{"lang": "fr"}'] [--json]
    durable-teams memory get users/u-42/memories favorite_color
    durable-teams memory put users/u-42/memories favorite_color '{"text": "blue"}'
    durable-teams memory delete users/u-42/memories favorite_color
    durable-teams memory delete users/u-42 --prefix      # forget everything about a user

A namespace is written as its labels joined by `/`. Errors are one line, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from typing import Any

from durable_teams.memory.postgres_store import safe_dsn
from durable_teams.memory.store import Namespace, Store, StoreError
from durable_teams.memory.store_config import open_store


class UsageError(ValueError):
    """A command line the store cannot use."""


def namespace_arg(text: str, *, allow_empty: bool = False) -> Namespace:
    labels = tuple(part for part in text.strip().strip("/").split("/")) if text.strip("/ ") else ()
    if not labels and not allow_empty:
        raise UsageError("give a namespace, its labels joined by '/' (e.g. users/u-42/memories)")
    return labels


def json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise UsageError(f"{what} is not JSON ({err})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, e.g. '{{\"text\": \"blue\"}}'")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-teams memory", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", help="the store's URL (default: $DURABLE_TEAMS_MEMORY, else the SQLite "
                   "file beside the dev server's state)")
    sub = p.add_subparsers(dest="action", required=True, metavar="action")
    listing = sub.add_parser("list", help="items under a namespace prefix, newest or most relevant first")
    listing.add_argument("prefix", nargs="?", default="")
    listing.add_argument("--query", help="rank by these words (or by meaning, with embeddings configured)")
    listing.add_argument("--filter", help="a JSON object the values must match, field by field")
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    get = sub.add_parser("get", help="print one item's value as JSON")
    get.add_argument("namespace")
    get.add_argument("key")
    put = sub.add_parser("put", help="create or replace an item")
    put.add_argument("namespace")
    put.add_argument("key")
    put.add_argument("value", help="a JSON object")
    delete = sub.add_parser("delete", help="delete an item, or with --prefix every item under a namespace")
    delete.add_argument("namespace")
    delete.add_argument("key", nargs="?")
    delete.add_argument("--prefix", action="store_true", help="delete every item whose namespace starts "
                        "with NAMESPACE (how a team forgets a user)")
    return p


async def run(args: argparse.Namespace, store: Store) -> int | str:
    if args.action == "list":
        found = await store.search(namespace_arg(args.prefix, allow_empty=True), query=args.query,
                                   filter=json_object(args.filter, "--filter") if args.filter else None,
                                   limit=args.limit)
        for item in found:
            if args.json:
                print(json.dumps(item.as_json(), ensure_ascii=False))
            else:
                print(f"{'/'.join(item.namespace)}  {item.key}  {json.dumps(item.value, ensure_ascii=False)}")
        return 0
    if args.action == "get":
        got = await store.get(namespace_arg(args.namespace), args.key)
        if got is None:
            return f"durable-teams memory: no item {args.key!r} in {args.namespace}"
        print(json.dumps(got.value, ensure_ascii=False, indent=2))
        return 0
    if args.action == "put":
        await store.put(namespace_arg(args.namespace), args.key, json_object(args.value, "the value"))
        print(f"Stored {args.key} in {args.namespace}.")
        return 0
    if args.prefix:
        if args.key is not None:
            raise UsageError("--prefix deletes a whole namespace: give no key with it")
        gone = await store.delete_prefix(namespace_arg(args.namespace))
        print(f"Deleted {gone} item{'s' if gone != 1 else ''} under {args.namespace}.")
        return 0
    if args.key is None:
        raise UsageError("give the key to delete, or --prefix to delete everything under the namespace")
    if not await store.delete(namespace_arg(args.namespace), args.key):
        return f"durable-teams memory: no item {args.key!r} in {args.namespace}"
    print(f"Deleted {args.key} from {args.namespace}.")
    return 0


async def run_with_store(args: argparse.Namespace) -> int | str:
    store = open_store(args.store)
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
