"""The worker's own state folder: where everything the worker trusts when it
reads it back lives (transaction journals, pre-images, previews and their
upper layers, applied-call records, transcripts).

It is outside every workspace (and no workspace may lie inside it), so neither the file tools (which resolve
beneath the workspace root) nor a sandboxed command (bubblewrap shows only
the system folders, program folders and the workspace; the state folder is
hidden even if a program folder contains it) can write it.

    $AGENT_TOOLS_STATE_DIR            (default $XDG_STATE_HOME/agent-tools,
                                       else ~/.local/state/agent-tools)
        <sha256 of the workspace's real path, 32 hex>/
            workspace                  the workspace's path (for a person looking)
            txn/<turn key>/<call key>/ see activities.txn.store
            applied/<turn key>.jsonl   see activities.txn.applied
            transcripts/<session>/     see activities.model.transcript_store

Keys are hashes of the full ids, so two ids sharing a long prefix never share
a folder, and an id can never name a path.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading

from activities.settings import SettingError, current_value
from activities.workspace.root import WorkspaceError
from core.config import STATE_DIR_ENV

MAX_ID_CHARS = 256  # = core.contracts.MAX_ID_CHARS

_lock = threading.Lock()
_made: dict[tuple[str, str], str] = {}


_bases: dict[tuple[str, str, str], str] = {}


def state_base() -> str:
    """The folder holding every workspace's state (not created here)."""
    try:
        raw = str(current_value("state_dir"))
    except SettingError as exc:
        raise WorkspaceError(str(exc)) from None
    # Resolved once per setting: every write asks several times.
    key = (raw, os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME", ""))
    hit = _bases.get(key)
    if hit is not None:
        return hit
    if raw:
        base = os.path.realpath(raw)
    else:
        xdg = key[1].strip()
        home = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "state")
        base = os.path.realpath(os.path.join(home, "agent-tools"))
    _bases[key] = base
    return base


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def id_key(value: str) -> str:
    """A turn, call or session id as one path component: a hash of all of it."""
    if len(value) > MAX_ID_CHARS:
        raise WorkspaceError(f"id of {len(value)} characters is too long (at most {MAX_ID_CHARS}); use a shorter id")
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def state_root(workspace: str) -> str:
    """This workspace's state folder, created (mode 0700) on first use.
    Refused when it would lie inside the workspace, or is a symlink."""
    ws = os.path.realpath(workspace)
    base = state_base()
    key = (base, ws)
    hit = _made.get(key)
    if hit is not None:
        return hit
    if _inside(base, ws):
        raise WorkspaceError(f"the state folder {base} is inside the workspace {ws}: commands and file tools could "
                             f"forge it; set {STATE_DIR_ENV} to a folder outside every workspace")
    if _inside(ws, base):  # the same forging, the other way round: that workspace's commands write here
        raise WorkspaceError(f"the workspace {ws} is inside the state folder {base}: its commands and file tools "
                             f"could forge the worker's records; set {STATE_DIR_ENV} to a folder outside every "
                             f"workspace, or use another workspace")
    folder = os.path.join(base, hashlib.sha256(ws.encode("utf-8", "surrogateescape")).hexdigest()[:32])
    with _lock:
        os.makedirs(base, 0o700, exist_ok=True)
        try:
            os.mkdir(folder, 0o700)
            with open(os.path.join(folder, "workspace"), "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(ws + "\n")
        except FileExistsError:
            pass
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(f"{folder} is a symlink or not a folder; remove it (it holds the worker's state)")
        _made[key] = folder
    return folder


def state_folder(workspace: str, *parts: str, create: bool = False) -> str:
    """A folder below the workspace's state folder (``parts`` are our own names
    or id keys, never ids)."""
    path = os.path.join(state_root(workspace), *parts)
    if create:
        os.makedirs(path, 0o700, exist_ok=True)
    return path
