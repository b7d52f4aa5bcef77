"""The sandbox's /tmp: a per-workspace scratch folder outside the workspace.

A command's ``/tmp`` is ``<state>/scratch/<workspace-hash>/`` on the worker
(``<state>`` = ``AGENT_TOOLS_STATE_DIR``, default ``$XDG_STATE_HOME/agent-tools``
or ``~/.local/state/agent-tools``), bound read-write into the sandbox. So
``cat > /tmp/patch.py <<'PY' ... PY`` in one call and ``python3 /tmp/patch.py``
in the next (or in a later turn on the same workspace) work, and nothing
there is part of the workspace's changeset: writing it needs no approval.

It is the sandbox's, never the worker's: the worker does not read anything
from it, only deletes (without following symlinks). Bounded: before each
command, when its files pass ``AGENT_TOOLS_BASH_SCRATCH_MB`` (default 512),
the oldest are deleted until it holds half that; a scratch folder untouched
for ``AGENT_TOOLS_BASH_SCRATCH_MAX_AGE_H`` hours (default 168) is removed
whole. ``AGENT_TOOLS_BASH_SCRATCH=off`` gives every command a private,
empty tmpfs ``/tmp`` instead (as before).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import time

from activities.settings import current
from activities.txn.state import state_base
from activities.workspace.root import open_beneath
from core.paths import within

log = logging.getLogger(__name__)

STAMP = ".last-used"  # name of the marker whose mtime says when a command last used the folder


def scratch_root() -> str:
    """Beside the worker's trusted state, never inside a workspace; nothing
    in it is trusted (the command writes it)."""
    return os.path.join(state_base(), "scratch")


def scratch_enabled() -> bool:
    return current().bash_scratch == "on"


def scratch_for(workspace: str) -> str | None:
    """The workspace's scratch folder, created (mode 0700) if need be; None
    when scratch is off or the folder cannot be made (then a private tmpfs)."""
    if not scratch_enabled():
        return None
    ws = os.path.realpath(workspace)
    root = scratch_root()
    if within(root, ws) or within(ws, root):
        log.warning("bash scratch disabled: the state folder %s and the workspace %s overlap", root, ws)
        return None
    folder = os.path.join(root, hashlib.sha256(ws.encode("utf-8", "surrogateescape")).hexdigest()[:24])
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(f"{folder} is not a folder")
        os.chmod(folder, 0o700)
        with open(os.path.join(root, f"{os.path.basename(folder)}{STAMP}"), "a"):
            pass
        os.utime(os.path.join(root, f"{os.path.basename(folder)}{STAMP}"))
    except OSError as exc:
        log.warning("bash scratch /tmp unavailable (a private tmpfs instead): %s", exc)
        return None
    bound(folder)
    prune_scratch()
    return folder


def _files(top_fd: int) -> list[tuple[float, str, str, int]]:
    """(mtime, folder relative to the top, name, size) of every file below,
    listed through descriptors (os.fwalk never follows a link)."""
    out = []
    for dirpath, _dirs, files, dir_fd in os.fwalk(".", dir_fd=top_fd, follow_symlinks=False):
        for name in files:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            out.append((st.st_mtime, dirpath, name, st.st_size if stat.S_ISREG(st.st_mode) else 0))
    return out


def bound(folder: str, max_bytes: int | None = None) -> int:
    """Delete the oldest files while the folder holds more than ``max_bytes``
    (down to half of it). Returns the bytes left.

    A command may be running in this folder meanwhile (another call's), and
    the worker deletes as root outside the sandbox: each file is unlinked in
    its folder opened again beneath the top without following any link, so
    a folder swapped for a link since the listing is never gone through."""
    if max_bytes is None:
        max_bytes = current().bash_scratch_bytes
    try:
        top = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        files = sorted(_files(top))
        total = sum(size for *_, size in files)
        if total <= max_bytes:
            return total
        for _, rel, name, size in files:
            if total <= max_bytes // 2:
                break
            try:
                parent = open_beneath(top, rel, os.O_PATH | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                os.unlink(name, dir_fd=parent)
                total -= size
            except OSError:
                pass
            finally:
                os.close(parent)
        return total
    finally:
        os.close(top)


def prune_scratch(max_age_s: float | None = None, now: float | None = None) -> list[str]:
    """Remove scratch folders no command used for ``max_age_s``."""
    if max_age_s is None:
        max_age_s = current().bash_scratch_max_age_s
    now = time.time() if now is None else now
    root = scratch_root()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        if not name.endswith(STAMP):
            continue
        stamp = os.path.join(root, name)
        try:
            if now - os.lstat(stamp).st_mtime <= max_age_s:
                continue
        except OSError:
            continue
        folder = os.path.join(root, name[: -len(STAMP)])
        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows symlinks
        try:
            os.unlink(stamp)
        except OSError:
            pass
        removed.append(folder)
    return removed
