"""What an edit or a write will change, read from the workspace when the turn
is planned: the diff of the whole file with real hunk lines, so the person
approving sees the change in place (``core.tools.display`` escapes and cuts).
Recorded with the plan, so every front-end shows the same text."""

from __future__ import annotations

import os
import stat
from typing import Any

from activities.workspace.root import WorkspaceError, WorkspaceRoot, clip
from activities.files.snapshots import not_read_message
from core.contracts import PlannedCall, ToolCall, ToolResult, TurnPlan
from core.tools.display import TEXT_MAX_BYTES, edited, file_diff
from core.tools.formatting import skipped_result
from core.tools.specs import BASH, EDIT_FILE, WRITE_FILE
from core.turn.planning import planned_arguments, snapshot_key

REVIEW_MAX_CHARS = 64 * 1024  # per call
PLAN_REVIEWS_MAX_CHARS = 512 * 1024  # per turn: the plan is recorded in the history


def _current(ws: WorkspaceRoot, path: str) -> bytes | None:
    """The file's bytes (bounded), or None when nothing is there."""
    loc, st = ws.lookup(path)
    try:
        if st is None:
            return None
        fd = loc.open(os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise IsADirectoryError(f"{path} is not a regular file")
            return os.read(fd, TEXT_MAX_BYTES + 1)
        finally:
            os.close(fd)
    finally:
        loc.close()


def review_text(workspace_root: str, name: str, args: dict[str, Any]) -> str:
    path = str(args.get("path", ""))
    try:
        with WorkspaceRoot(workspace_root) as ws:
            old = _current(ws, path)
    except (WorkspaceError, OSError, ValueError) as exc:
        return f"({path}: cannot be read for review: {exc})"
    if name == WRITE_FILE:
        lines = file_diff(path, old, str(args.get("content", "")))
    else:
        if old is None:
            return f"({path}: does not exist; the edit will fail)"
        before = old.decode("utf-8", "surrogateescape")
        after = edited(before, str(args.get("old_string", "")), str(args.get("new_string", "")),
                       bool(args.get("replace_all")))
        if after is None:
            return f"({path}: the text to replace is not in the file; the edit will fail)"
        lines = file_diff(path, old, after.encode("utf-8", "surrogateescape"))
    text = "\n".join(lines)
    if len(text) > REVIEW_MAX_CHARS:
        text = text[:REVIEW_MAX_CHARS].rsplit("\n", 1)[0] + f"\n({path}: review cut at {REVIEW_MAX_CHARS:,} characters)"
    return text


def certain_failure(workspace_root: str, name: str, args: dict[str, Any], may_hold_snapshot: bool) -> str | None:
    """Why an edit or write will fail whatever the approver says, or None.
    ``may_hold_snapshot``: the turn holds, or may take earlier in the batch,
    a snapshot of the path (then only what the file itself shows counts)."""
    path = str(args.get("path", ""))
    try:
        with WorkspaceRoot(workspace_root) as ws:
            rel = ws.rel(path)
            old = _current(ws, path)
    except FileNotFoundError:
        old, rel = None, path  # a missing parent folder: an edit fails, a write creates it
    except WorkspaceError as exc:
        return f"{exc} (refused by the file tools)"
    except (OSError, ValueError):
        return None  # the tool will say what it finds then
    if name == EDIT_FILE:
        if old is None:
            return f"file not found: {clip(rel)}. edit_file changes existing files; create new ones with write_file"
        if not may_hold_snapshot:
            return not_read_message(rel, None, "call edit_file")
        text = old.decode("utf-8", "surrogateescape")
        if edited(text, str(args.get("old_string", "")), "", False) is None:
            return f"old_string was not found in {rel}: read the file again and copy the text exactly"
        return None
    content = str(args.get("content", "")).encode("utf-8", "surrogateescape")
    if old is not None and not may_hold_snapshot and old != content:
        return not_read_message(rel, None, "call write_file")
    return None


def with_reviews(
    plan: TurnPlan, workspace_root: str, tool_calls: list[ToolCall], snapshot_paths: list[str] | None = None
) -> TurnPlan:
    """The plan with a review diff on each edit and write that asks, and
    those that will certainly fail settled now, with their reason, so that
    the approval shows only what can run. ``snapshot_paths``: the turn's
    snapshots (None: not known, so no call is judged on them)."""
    budget = PLAN_REVIEWS_MAX_CHARS
    calls: list[PlannedCall] = []
    changed = False
    keys = [snapshot_key(workspace_root, c.path) if c.path else None for c in plan.calls]
    has_bash = any(c.name == BASH for c in plan.calls)
    first_failure: PlannedCall | None = None
    for call in plan.calls:
        if first_failure is not None and call.needs_approval and not call.concurrency_safe:
            # A call after one that fails is skipped when the turn runs: it
            # will not run either, so it is not put before the approver.
            skipped = skipped_result(call.call_id, call.name, first_failure.index, first_failure.name)
            calls.append(call.model_copy(update={"early_result": skipped}))
            changed = True
            continue
        if call.needs_approval and call.name in (EDIT_FILE, WRITE_FILE):
            try:
                args = planned_arguments(call, tool_calls[call.index])
            except ValueError:
                calls.append(call)
                continue
            key = keys[call.index] if call.index < len(keys) else None
            # Another call on the same path, or any command, may change the
            # file or take a snapshot first: then nothing is certain.
            shared = has_bash or sum(1 for k in keys if k == key) > 1
            if not shared:
                may_hold = snapshot_paths is None or key in snapshot_paths
                why = certain_failure(workspace_root, call.name, args, may_hold)
                if why is not None:
                    result = ToolResult.error(call.call_id, call.name, f"Not run (found when the turn was planned): {why}",
                                              metadata={"failure": "certain", "planned": "true"})
                    calls.append(call.model_copy(update={"early_result": result}))
                    first_failure = first_failure or call
                    changed = True
                    continue
            text = review_text(workspace_root, call.name, args) if budget > 0 else (
                "(the turn's reviews are too long to record; `agent-turn show` lists the arguments)")
            budget -= len(text)
            call = call.model_copy(update={"review": text})
            changed = True
        calls.append(call)
    return plan.model_copy(update={"calls": calls}) if changed else plan
