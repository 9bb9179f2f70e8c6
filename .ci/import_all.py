"""Import every module of durable_teams in this environment (a venv holding only what one
extra declares): a module may fail only on an import of an extra that is not installed here
(durable_teams/cli/extras.py). Usage: python .ci/import_all.py [EXTRA[,EXTRA...]]"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import durable_teams
from durable_teams.cli.extras import IMPORTS_OF_EXTRA, missing_module


def main() -> int:
    installed = {e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e}
    have = set().union(*(IMPORTS_OF_EXTRA[e] for e in installed)) if installed else set()
    may_miss = set().union(*IMPORTS_OF_EXTRA.values()) - have
    imported, skipped, wrong = 0, [], []
    for info in pkgutil.walk_packages(durable_teams.__path__, "durable_teams."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
            imported += 1
        except Exception as err:  # noqa: BLE001 - every failure is reported below
            name = (missing_module(err) or "").partition(".")[0]
            if name in may_miss:
                skipped.append(f"{info.name} (needs {name})")
            else:
                wrong.append(f"{info.name}: {type(err).__name__}: {err}")
    label = ",".join(sorted(installed)) or "no extra"
    print(f"{label}: imported {imported} modules; {len(skipped)} need another extra")
    for line in wrong:
        print(f"  FAILED {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
