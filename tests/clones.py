"""A copy of the checkout as a fresh clone has it, for tests that build or install from one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tracked_copy(destination: Path) -> Path:
    """The files a fresh clone has (git's tracked files, links kept as links), or the whole
    tree where there is no git."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        shutil.copytree(ROOT, destination, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".*_cache"))
        return destination
    for name in filter(None, listed.stdout.decode().split("\0")):
        source, target = ROOT / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.exists():  # listed but deleted in the working tree: a clone would have it
            shutil.copy2(source, target)
    return destination
