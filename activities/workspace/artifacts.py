"""Retention of full-output artifacts (``.agent-artifacts/`` in the workspace).

Every tool that saves an artifact (bash's full output, a large read) calls
``prune_artifacts`` right after saving, so the folder stays bounded without a
background job:

1. artifacts older than ``AGENT_TOOLS_ARTIFACTS_MAX_AGE_H`` hours (default
   168, one week) are deleted;
2. then, while the artifacts together exceed ``AGENT_TOOLS_ARTIFACTS_MAX_MB``
   (default 256 MiB), the oldest are deleted first.

The artifact just saved (``keep``) is never deleted, even if it alone is over
the cap (its own size is bounded by its writer). Only regular files directly
in the folder whose names end in ``.txt`` are artifacts; ``.gitignore``,
subfolders (another component's journal, say) and symlinks are left alone.

Transactional bash's call folders (``<state>/txn/<turn>/<call>/`` in the
worker's state folder, activities.txn.state) follow
the age rule only, and only those ``journal.prunable`` lists (applied calls,
whose turn then can no longer be rolled back, and leftovers of captures that
never reached a journal): a journaled or previewed call is never deleted, a
retry or an approval still needs it. A turn folder left with only its file
log (``files.jsonl``, the file tools' images and results) goes whole once
that log is older than the cut.
Files are listed and deleted relative to a descriptor of the folder opened
with O_NOFOLLOW, so a command that swapped the folder for a symlink cannot
make the worker delete elsewhere. 0 disables a rule.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from activities.txn import journal
from activities.txn.overlay import remove_tree
from activities.txn.retention import note_pruned, prune_notes
from activities.settings import current as current_settings
from activities.workspace.paths import ARTIFACTS_DIR, open_artifact
from core.config import ARTIFACTS_MAX_AGE_ENV, ARTIFACTS_MAX_TOTAL_ENV, ToolSettings

log = logging.getLogger(__name__)

ARTIFACTS_FOLDER = ARTIFACTS_DIR
MAX_TOTAL_ENV = ARTIFACTS_MAX_TOTAL_ENV
MAX_AGE_ENV = ARTIFACTS_MAX_AGE_ENV
DEFAULT_MAX_TOTAL_BYTES = ToolSettings.artifacts_max_total_bytes
DEFAULT_MAX_AGE_S = ToolSettings.artifacts_max_age_s


@dataclass(frozen=True)
class Pruned:
    removed: tuple[str, ...]  # names deleted
    kept_bytes: int  # total size of the artifacts left


def save_artifact(root: str | Path, call_id: str, label: str, data: str | bytes) -> str:
    """Save full output that did not fit in a result; return its path relative
    to the workspace root."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    fd, rel = open_artifact(root, call_id, label)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    prune_artifacts(root, keep=rel)  # the retention rule, below
    return rel


def prune_artifacts(
    root: str | os.PathLike[str],
    keep: str | None = None,
    *,
    max_total_bytes: int | None = None,
    max_age_s: float | None = None,
    now: float | None = None,
) -> Pruned:
    """Apply the retention rule to ``root``'s artifacts folder; ``keep`` is
    the name (or workspace-relative path) of the artifact just saved. Never
    raises for a missing or unreadable folder: retention must not fail a save
    (a bad setting does: core.config.SettingError)."""
    if max_total_bytes is None or max_age_s is None:
        settings = current_settings()
        max_total_bytes = settings.artifacts_max_total_bytes if max_total_bytes is None else max_total_bytes
        max_age_s = settings.artifacts_max_age_s if max_age_s is None else max_age_s
    now = time.time() if now is None else now
    keep_name = os.path.basename(keep) if keep else None
    try:
        dir_fd = os.open(Path(root) / ARTIFACTS_FOLDER, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return Pruned((), 0)
    removed: list[str] = []
    try:
        files: list[tuple[float, str, int]] = []  # (mtime, name, size)
        for name in os.listdir(dir_fd):
            if not name.endswith(".txt"):
                continue
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files.append((st.st_mtime, name, st.st_size))
        files.sort()  # oldest first

        def remove(name: str) -> bool:
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass  # another worker pruned it first
            except OSError as exc:
                log.warning("could not delete artifact %s: %s", name, exc)
                return False
            removed.append(name)
            return True

        left: list[tuple[float, str, int]] = []
        for mtime, name, size in files:
            if max_age_s and name != keep_name and now - mtime > max_age_s and remove(name):
                continue
            left.append((mtime, name, size))
        total = sum(size for _, _, size in left)
        if max_total_bytes:
            for _, name, size in left:
                if total <= max_total_bytes:
                    break
                if name != keep_name and remove(name):
                    total -= size
        if max_age_s:
            removed += _prune_txn(root, now - max_age_s)
        return Pruned(tuple(removed), total)
    finally:
        os.close(dir_fd)


def _prune_txn(root: str | os.PathLike[str], older_than: float) -> list[str]:
    """Delete the txn call folders journal.prunable allows, older than the cut."""

    removed: list[str] = []
    try:
        folders = journal.prunable(os.path.realpath(root))
    except OSError as exc:
        log.warning("cannot list transaction folders for pruning: %s", exc)
        return removed
    for folder in folders:
        try:
            # A command run without capture can write here: never delete through a planted symlink.
            if os.path.realpath(folder) != folder or os.path.islink(folder):
                continue
            if os.lstat(folder).st_mtime >= older_than:
                continue
            note_pruned(os.path.realpath(root), os.path.basename(os.path.dirname(folder)), calls=1)
            remove_tree(folder)
            removed.append("txn/" + os.path.relpath(folder, os.path.dirname(os.path.dirname(folder))))
            try:
                os.rmdir(os.path.dirname(folder))  # the turn's folder, once empty
            except OSError:
                pass
        except OSError as exc:
            log.warning("could not delete transaction folder %s: %s", folder, exc)
    removed += _prune_turn_logs(root, older_than)
    prune_notes(os.path.realpath(root), older_than)
    return removed


def _prune_turn_logs(root: str | os.PathLike[str], older_than: float) -> list[str]:
    """A turn folder left with only its file log (and kept pre-images), not
    written since the cut, goes whole: that turn can no longer be rolled back."""
    from activities.txn import turn_log
    from activities.txn.overlay import remove_tree
    from activities.txn.store import call_folders, txn_base

    removed: list[str] = []
    try:
        base = txn_base(os.path.realpath(root))
        turns = sorted(os.listdir(base)) if os.path.isdir(base) else []
    except OSError as exc:
        log.warning("cannot list transaction folders for pruning: %s", exc)
        return removed
    for turn in turns:
        folder = os.path.join(base, turn)
        try:
            log_file = os.path.join(folder, turn_log.LOG)
            if call_folders(folder) or not os.path.isfile(log_file) or os.lstat(log_file).st_mtime >= older_than:
                continue
            note_pruned(os.path.realpath(root), turn, log=True)
            remove_tree(folder)
            turn_log.forget(folder)
            removed.append(f"txn/{turn}")
        except OSError as exc:
            log.warning("could not delete transaction folder %s: %s", folder, exc)
    return removed
