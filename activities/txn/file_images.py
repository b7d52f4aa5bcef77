"""Pre- and post-images of the file tools' writes, so a turn's rollback
covers write_file and edit_file as it covers bash.

Before a write the file as it is (or its absence) is kept in the turn's
transaction folder (``journal.record_preimage``); after it, what the write
left (``journal.record_postimage``), so a rollback can tell whether someone
changed the file since. Calls without a turn id (turns from before
ToolRequest.turn_id) record nothing. Recording never fails the write: a
problem is logged, and that file is then not covered by rollback.
"""

from __future__ import annotations

import logging
import os

from activities.txn import journal
from activities.files.common import atomic_write
from activities.workspace.root import Location
from activities.workspace.paths import WorkspaceError
from core.contracts import ToolRequest

log = logging.getLogger(__name__)


def recorded_write(request: ToolRequest, loc: Location, data: bytes, **kw) -> os.stat_result:
    """``atomic_write`` between the pre-image and the post-image."""
    root, turn, call = request.workspace_root, request.turn_id, request.call_id
    if turn:
        try:
            note = journal.record_preimage(root, turn, call, loc.rel)
            if note:
                log.warning("%s %s: %s", request.tool, call, note)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("%s %s: pre-image of %s not recorded (no rollback for it): %s", request.tool, call,
                        loc.rel, exc)
            turn = ""
    written = atomic_write(loc, data, **kw)
    if turn:
        try:
            journal.record_postimage(root, turn, call, loc.rel)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("%s %s: post-image of %s not recorded: %s", request.tool, call, loc.rel, exc)
    return written


def record_new_folders(request: ToolRequest, path: str) -> list[str]:
    """Before write_file creates the missing folders of ``path``: record them
    as absent, so rollback removes them too. Returns them (for ``folders_made``)."""
    if not request.turn_id:
        return []
    root = os.path.realpath(request.workspace_root)
    rel = os.path.relpath(path, root) if os.path.isabs(path) else os.path.normpath(path)
    parts = rel.replace(os.sep, "/").split("/")[:-1]
    if not parts or parts[0] in ("..", "."):
        return []
    missing: list[str] = []
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if missing or not os.path.lexists(os.path.join(root, prefix)):
            missing.append(prefix)
    for folder in missing:
        try:
            journal.record_preimage(root, request.turn_id, request.call_id, folder)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("write_file %s: folder %s not recorded: %s", request.call_id, folder, exc)
            return []
    return missing


def folders_made(request: ToolRequest, folders: list[str]) -> None:
    for folder in folders:
        try:
            journal.record_postimage(request.workspace_root, request.turn_id, request.call_id, folder)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("write_file %s: folder %s not recorded: %s", request.call_id, folder, exc)
