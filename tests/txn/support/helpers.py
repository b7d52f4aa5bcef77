"""Helpers shared by the transactional-bash tests: run a shell script inside
real bubblewrap on a real overlay of a real workspace."""

from __future__ import annotations

import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from activities.txn import overlay
from activities.bash.tool import bwrap_argv
from activities.sandbox.environment import DEFAULT_PATH

BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"


def _capture_works() -> tuple[bool, str]:
    probe = tempfile.mkdtemp(prefix="txn-probe-")  # same filesystem as pytest's tmp_path
    try:
        return overlay.overlay_status(probe)
    finally:
        shutil.rmtree(probe)


_OK, _WHY = _capture_works()
needs_overlay = pytest.mark.skipif(not _OK, reason=f"overlay capture unavailable here: {_WHY}")


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


def modes(root: Path) -> dict[str, int]:
    """path -> permission bits of files and folders (artifacts left out)."""
    return {
        p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode)
        for p in root.rglob("*") if not p.is_symlink() and ".agent-artifacts" not in p.parts
    }


def seed(ws: Path) -> None:
    """A workspace for SCRIPT, which exercises every kind of change."""
    (ws / "sub" / "deep").mkdir(parents=True)
    (ws / "sub" / "s").write_text("s\n")
    (ws / "sub" / "deep" / "d").write_text("d\n")
    (ws / "r").write_text("rename me\n")
    (ws / "x.sh").write_text("echo hi\n")
    (ws / "f").write_text("file becomes folder\n")
    (ws / "dir2file").mkdir()
    (ws / "dir2file" / "inner").write_text("i\n")
    (ws / "keep.txt").write_text("line 1\n")


SCRIPT = (
    "rm -r sub && mkdir sub && echo z > sub/z && mv r r2 && chmod 755 x.sh && ln -s x.sh link"
    " && rm f && mkdir f && echo in > f/in && rm -r dir2file && echo now-a-file > dir2file"
    " && echo 'line 2' >> keep.txt && mkdir -p new/a/b && echo deep > new/a/b/c && chmod 500 new/a"
)


def written(workspace: str | Path, name: str) -> bool:
    """Has a running command written ``name``? A captured command's writes show
    in its copy-on-write upper layer until it ends and they are applied."""
    ws = Path(workspace)
    return (ws / name).exists() or any(ws.glob(f".agent-artifacts/txn/*/*/upper/{name}"))
