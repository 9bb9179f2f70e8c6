"""Import the module a `--team` spec names, the way uvicorn and celery find an app.

`myteams:TEAMS` is a module on the import path, with the working directory on it (a team file
beside you loads, without PYTHONPATH=.); `path/to/myteams.py:TEAMS` is a file, imported with
its folder on the path (so it can import its neighbours). A module that is not found says
where it was looked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


class TeamModuleNotFound(ModuleNotFoundError):
    """The module a `--team` spec names is not there (not something it imports)."""


def split_spec(spec: str) -> tuple[str, str]:
    """`module:attr` -> (module, attr); the attr defaults to TEAMS. A Windows drive letter
    (`C:\\teams\\mine.py:TEAMS`) is part of the path, not the separator."""
    head, sep, attr = spec.rpartition(":")
    if not sep or (len(head) == 1 and head.isalpha()) or "/" in attr or "\\" in attr:
        return spec, "TEAMS"
    return head, attr or "TEAMS"


def is_file_spec(module: str) -> bool:
    return module.endswith(".py") or "/" in module or os.sep in module


def with_cwd_on_path() -> None:
    """Put the working directory first on `sys.path`, as `python -m` and uvicorn do (a console
    script's path starts with its own bin folder instead)."""
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)


def import_team_module(module: str) -> ModuleType:
    """The module named `module` (dotted name or file path). A module that is not there raises
    `TeamModuleNotFound` saying where it looked; anything else its own code raises, as is."""
    if is_file_spec(module):
        return _import_file(Path(module))
    with_cwd_on_path()
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is not None and (module == err.name or module.startswith(err.name + ".")):
            raise TeamModuleNotFound(not_found_text(module, err.name)) from None
        raise


def not_found_text(module: str, missing: str) -> str:
    top = missing.split(".")[0]
    return (f"No module named {missing!r} (looked for {top}.py or a {top}/ package in the working "
            f"directory {os.getcwd()} and on the Python path; run from the folder that holds it, "
            f"or give its file: path/to/{module.split('.')[-1]}.py:TEAMS)")


def _import_file(path: Path) -> ModuleType:
    resolved = path.expanduser().resolve()
    if not resolved.is_file():
        raise TeamModuleNotFound(f"no file {str(path)!r} (from the working directory {os.getcwd()})")
    name = resolved.stem
    folder = str(resolved.parent)
    if folder not in sys.path:  # its neighbours import as they would with `python myteams.py`
        sys.path.insert(0, folder)
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) \
            and Path(existing.__file__ or "").resolve() == resolved:
        return existing
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TeamModuleNotFound(f"{str(path)!r} is not a Python file")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # so pickling, dataclasses and the sandbox find it by name
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return loaded
