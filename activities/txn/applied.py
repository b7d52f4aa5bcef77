"""The applied-calls journal: a write or edit that already happened says so
when it runs again.

With local activities several writes and edits of one turn can land on disk
within one workflow task, before anything is recorded in the history. If the
worker dies then, the replayed turn runs the first write again, against a
file that later calls of the same turn have changed since: its snapshot check
would report a conflict for a write that in fact succeeded. So every unsafe
file tool records its result here before it returns (durable before the
next unsafe call acts); a repeat of the same (turn, call) returns the
recorded result instead of acting again.

One JSON line per call, in the turn's log (``<state>/txn/<turn key>/files.jsonl``
in the worker's state folder, shared with the file tools' pre- and
post-images: activities.txn.turn_log). A crash between the effect and the
journal line leaves a file no later call has touched yet, which the tools'
own idempotence check (the file already holds the intended content) covers.
"""

from __future__ import annotations

import logging
import os

from activities.txn import turn_log
from activities.txn.store import turn_dir
from activities.workspace.paths import WorkspaceError, workspace_root
from core.contracts import ToolRequest, ToolResult

REPLAYED = "replayed_from_journal"
log = logging.getLogger(__name__)


def journal_path(root: str, turn_id: str) -> str:
    """The turn's log, where the results are kept (with the file tools' images)."""
    return os.path.join(turn_dir(str(workspace_root(root)), turn_id), turn_log.LOG)


def recorded_result(request: ToolRequest) -> ToolResult | None:
    """The result this (turn, call) already had, or None. From the turn's
    in-process index (no re-reading: it follows the log by offset)."""
    if not request.turn_id:
        return None
    try:
        idx = turn_log.index(turn_dir(str(workspace_root(request.workspace_root)), request.turn_id))
    except (OSError, WorkspaceError):
        return None  # no workspace: the tool says so itself
    with idx.lock:
        raw = idx.results.get(request.call_id)
    if raw is None:
        return None
    try:
        result = ToolResult.model_validate(raw)
    except ValueError:
        return None
    result.metadata[REPLAYED] = "true"
    return result


def record_result(request: ToolRequest, result: ToolResult) -> None:
    """Append before the tool's activity returns, without a sync of its own:
    the next call's pre-image sync makes it durable before that call acts
    (activities.txn.turn_log); a process crash keeps it either way."""
    if not request.turn_id:
        return
    try:
        idx = turn_log.index(turn_dir(str(workspace_root(request.workspace_root)), request.turn_id, create=True))
        with idx.lock:
            idx.append(turn_log.result_record(request.call_id, result.model_dump(mode="json")), durable=False)
    except (OSError, WorkspaceError) as exc:
        log.warning("cannot journal %s of turn %s: %s", request.call_id, request.turn_id, exc)
