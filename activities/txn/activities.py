"""The activities of transactional bash beyond the bash tool itself:

- ``rollback_turn``: restore what a turn changed (write_file, edit_file and
  bash), on the worker that holds the workspace; idempotent (a path already
  back counts as done), so it is retried freely;
- ``bash_preview``: run an ``ask`` command in a throwaway copy-on-write view
  before approval (activities.bash.tool.run_bash_preview);
- ``bash_discard_preview``: drop a preview that was rejected;
- ``bash_apply_journal``: apply a journal-only bash run's changes, only if
  they are the changeset whose digest the turn recorded (the bash result in
  its history); idempotent, heartbeating like the rollback.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

from temporalio import activity

from activities.bash import attempts as bash_txn
from activities.txn import api as txn
from activities.base import _check_root, in_thread_heartbeating, tool_activity
from activities.bash.tool import run_bash_preview
from activities.txn.preview import discard_preview
from activities.workspace.paths import WorkspaceError, workspace_root
from activities.workspace.root import serves
from core.contracts import ToolRequest, ToolResult
from core.names import APPLY_JOURNAL_ACTIVITY, BASH_PREVIEW_ACTIVITY, DISCARD_PREVIEW_ACTIVITY, ROLLBACK_ACTIVITY
from core.txn_contracts import RollbackRequest, RollbackResult

ROLLBACK_HEARTBEAT_EVERY_S = 1.0  # well inside the workflow's heartbeat timeout


def apply_journal(request: ToolRequest) -> ToolResult:
    """The apply half of a journal-only bash call: the result holds only what
    applying adds (the command's own result is the first half's)."""
    root = str(workspace_root(request.workspace_root))
    done = txn.apply_recorded(root, request.turn_id, request.call_id, request.txn_digest)
    make = ToolResult.error if done.is_error else ToolResult.ok
    return make(request.call_id, request.tool, done.notes(), metadata=dict(done.metadata))


class RollbackRefused(Exception):
    """The request cannot be served here (wrong workspace, no such folder)."""


def rollback(request: RollbackRequest, allowed_root: str | None = None) -> RollbackResult:
    if allowed_root is not None:
        if not serves(allowed_root, request.workspace_root):
            raise RollbackRefused(
                f"this worker serves the workspace {os.path.realpath(allowed_root)}, not {request.workspace_root}"
            )
    try:
        root = str(workspace_root(request.workspace_root))
    except WorkspaceError as exc:
        raise RollbackRefused(str(exc)) from None
    report = txn.rollback(root, request.turn_id)
    return RollbackResult(
        turn_id=request.turn_id, workspace_root=root, restored=report.restored, already=report.already,
        conflicts=report.conflicts, not_restorable=report.not_restorable, unchecked=report.unchecked,
        pruned=report.pruned, text=report.text(),
    )


def build_txn_activities(workspace_root_: str | None = None) -> list[Callable[..., Any]]:
    @activity.defn(name=ROLLBACK_ACTIVITY)
    async def rollback_turn(request: RollbackRequest) -> RollbackResult:
        from temporalio.exceptions import ApplicationError

        try:
            return await in_thread_heartbeating(lambda: rollback(request, workspace_root_), ROLLBACK_HEARTBEAT_EVERY_S)
        except RollbackRefused as exc:
            raise ApplicationError(str(exc), type="RollbackRefused", non_retryable=True) from None

    @activity.defn(name=DISCARD_PREVIEW_ACTIVITY)
    async def bash_discard_preview(request: ToolRequest) -> None:
        if _check_root(request, workspace_root_) is not None:
            return
        root = str(workspace_root(request.workspace_root))
        await asyncio.to_thread(discard_preview, root, request.turn_id, request.call_id)
        await asyncio.to_thread(bash_txn.discard_nochange_preview, root, request.turn_id, request.call_id)

    @activity.defn(name=APPLY_JOURNAL_ACTIVITY)
    async def bash_apply_journal(request: ToolRequest) -> ToolResult:
        refused = _check_root(request, workspace_root_)
        if refused is not None:
            return refused
        result = await in_thread_heartbeating(lambda: apply_journal(request), ROLLBACK_HEARTBEAT_EVERY_S)
        result.metadata["apply_attempt"] = str(activity.info().attempt)
        return result

    preview = tool_activity(BASH_PREVIEW_ACTIVITY, run_bash_preview, in_thread=False, allowed_root=workspace_root_)
    return [rollback_turn, bash_discard_preview, bash_apply_journal, preview]
