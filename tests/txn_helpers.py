"""Helpers shared by the transactional-bash tests: run a shell script inside
real bubblewrap on a real overlay of a real workspace."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from activities import overlay
from activities.bash import DEFAULT_PATH, bwrap_argv

BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"


def sandboxed(workspace: str | Path, script: str) -> list[str]:
    return bwrap_argv(BWRAP, str(workspace), ["/bin/sh", "-c", script], DEFAULT_PATH)


def run_captured(workspace: str | Path, script: str, turn_id: str = "turn-1", call_id: str = "call-1"):
    """(capture, completed process) for ``script`` run on an overlay of the workspace."""
    cap = overlay.begin(str(workspace), turn_id, call_id)
    proc = subprocess.run(
        cap.wrap(sandboxed(cap.workspace, script)),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": DEFAULT_PATH, "HOME": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return cap, proc


def tree(root: str | Path) -> dict[str, str]:
    """path -> content (files), '->target' (symlinks), '/' (folders); artifacts left out."""
    root = Path(root)
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(".agent-artifacts"):
            continue
        if p.is_symlink():
            out[rel] = "->" + str(p.readlink())
        elif p.is_dir():
            out[rel] = "/"
        else:
            out[rel] = p.read_bytes().decode("utf-8", "replace")
    return out
