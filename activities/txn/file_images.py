"""Pre- and post-images of the file tools' writes, so a turn's rollback
covers write_file and edit_file as it covers bash.

Before a write the file as it is (or its absence) is kept in the turn's log
in the worker's state folder (``journal.record_preimage``, durable before
the write); after it, what the write left (``journal.record_postimage``,
appended lazily: see activities.txn.turn_log), so a rollback can tell whether
someone changed the file since. Calls without a turn id (turns from before
ToolRequest.turn_id) record nothing. Recording never fails the write: a
problem is logged, and that file is then not covered by rollback.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat

from activities.txn import journal
from activities.txn.changeset import FILE, SPECIAL_BITS, Node
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
            note = journal.record_preimage(root, turn, call, loc.rel, dir_fd=loc.dir_fd, name=loc.name)
            if note:
                log.warning("%s %s: %s", request.tool, call, note)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("%s %s: pre-image of %s not recorded (no rollback for it): %s", request.tool, call,
                        loc.rel, exc)
            turn = ""
    written = atomic_write(loc, data, **kw)
    if turn:
        try:
            # What was written, from the bytes in hand: no read-back.
            node = Node(FILE, stat.S_IMODE(written.st_mode) & ~SPECIAL_BITS, len(data),
                        hashlib.sha256(data).hexdigest())
            journal.record_postimage(root, turn, call, loc.rel, node, known=True)
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
    try:
        for folder in missing:
            journal.record_preimage(root, request.turn_id, request.call_id, folder, durable=False)
        if missing:
            journal.sync_log(root, request.turn_id)  # recorded before they are made
    except (OSError, WorkspaceError, ValueError) as exc:
        log.warning("write_file %s: folders %s not recorded: %s", request.call_id, missing, exc)
        return []
    return missing


def folders_made(request: ToolRequest, folders: list[str]) -> None:
    for folder in folders:
        try:
            journal.record_postimage(request.workspace_root, request.turn_id, request.call_id, folder)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("write_file %s: folder %s not recorded: %s", request.call_id, folder, exc)
