"""The applied-calls journal: a write or edit that already happened says so
when it runs again.

With local activities several writes and edits of one turn can land on disk
within one workflow task, before anything is recorded in the history. If the
worker dies then, the replayed turn runs the first write again, against a
file that later calls of the same turn have changed since: its snapshot check
would report a conflict for a write that in fact succeeded. So every unsafe
file tool records its result here, durably, before it returns (and so before
the next unsafe call can start); a repeat of the same (turn, call) returns the
recorded result instead of acting again.

One JSON line per call, in ``<state>/applied/<turn key>.jsonl`` in the
worker's state folder (activities.txn.state; the turn id hashed into the name). A crash between the effect and the
journal line leaves a file no later call has touched yet, which the tools'
own idempotence check (the file already holds the intended content) covers.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from activities.txn.state import id_key, state_folder
from activities.workspace.paths import WorkspaceError, workspace_root
from core.contracts import ToolRequest, ToolResult

JOURNAL_DIR = "applied"
REPLAYED = "replayed_from_journal"
log = logging.getLogger(__name__)


def journal_path(root: str, turn_id: str) -> Path:
    return Path(state_folder(str(workspace_root(root)), JOURNAL_DIR)) / f"{id_key(turn_id)}.jsonl"


def recorded_result(request: ToolRequest) -> ToolResult | None:
    """The result this (turn, call) already had, or None."""
    if not request.turn_id:
        return None
    try:
        lines = journal_path(request.workspace_root, request.turn_id).read_text(encoding="utf-8").splitlines()
    except (OSError, WorkspaceError):
        return None  # no journal yet (or no workspace: the tool says so itself)
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line from a crash mid-append
        if entry.get("turn_id") == request.turn_id and entry.get("call_id") == request.call_id:
            result = ToolResult.model_validate(entry["result"])
            result.metadata[REPLAYED] = "true"
            return result
    return None


def record_result(request: ToolRequest, result: ToolResult) -> None:
    """Append durably (fsync) before the tool's activity returns."""
    if not request.turn_id:
        return
    try:
        path = journal_path(request.workspace_root, request.turn_id)
        path.parent.mkdir(parents=True, exist_ok=True)
    except (OSError, WorkspaceError) as exc:
        log.warning("cannot journal %s of turn %s: %s", request.call_id, request.turn_id, exc)
        return
    line = json.dumps(
        {"turn_id": request.turn_id, "call_id": request.call_id, "result": result.model_dump(mode="json")},
        ensure_ascii=True,
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
