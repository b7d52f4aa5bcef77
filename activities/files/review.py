"""What an edit or a write will change, read from the workspace when the turn
is planned: the diff of the whole file with real hunk lines, so the person
approving sees the change in place (``core.tools.display`` escapes and cuts).
Recorded with the plan, so every front-end shows the same text."""

from __future__ import annotations

import os
import stat
from typing import Any

from activities.workspace.root import WorkspaceError, WorkspaceRoot
from core.contracts import PlannedCall, ToolCall, TurnPlan
from core.tools.display import TEXT_MAX_BYTES, edited, file_diff
from core.tools.specs import EDIT_FILE, WRITE_FILE
from core.turn.planning import planned_arguments

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


def with_reviews(plan: TurnPlan, workspace_root: str, tool_calls: list[ToolCall]) -> TurnPlan:
    """The plan with a review diff on each edit and write that asks."""
    budget = PLAN_REVIEWS_MAX_CHARS
    calls: list[PlannedCall] = []
    changed = False
    for call in plan.calls:
        if call.needs_approval and call.name in (EDIT_FILE, WRITE_FILE):
            try:
                args = planned_arguments(call, tool_calls[call.index])
            except ValueError:
                calls.append(call)
                continue
            text = review_text(workspace_root, call.name, args) if budget > 0 else (
                "(the turn's reviews are too long to record; `agent-turn show` lists the arguments)")
            budget -= len(text)
            call = call.model_copy(update={"review": text})
            changed = True
        calls.append(call)
    return plan.model_copy(update={"calls": calls}) if changed else plan
