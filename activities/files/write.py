"""The file tools: read_file, write_file, edit_file.

Each is a plain function ``(request, args) -> ToolResult`` (testable without
Temporal) and an activity of the same name. Every path is resolved beneath
the workspace root's descriptor (``activities.workspace.root``) and every operation
is relative to the descriptor of the file's real folder, so no symlink is
followed out of the workspace, by readers or writers, even while a sandboxed
script swaps folders and links under our feet. Names with control characters
are refused; OS errors become error results naming the path.

read_file lives in ``activities.files.read``, edit_file in ``activities.files.edit``,
what they share in ``activities.files.common``. Writes are atomic (temp file in
the same folder, fsync, rename, all by the folder's descriptor) and guarded
by the snapshot check in ``activities.files.snapshots``.
"""

from __future__ import annotations

import os

from activities.workspace.cancel import run_in_thread
from activities.files.common import (
    Refusal,
    count_lines,
    encode_text,
    guarded,
    refuse_artifacts,
    lookup,
    refuse_git_located,
    refuse_git_through_link,
    read_bytes,
    refuse_non_regular,
)
from activities.files.edit import edit_file
from activities.txn.file_images import folders_made, record_new_folders, recorded_write
from activities.files.read import read_file
from activities.workspace.root import Location, WorkspaceRoot
from activities.files.snapshots import (
    MAX_DIFF_INPUT_BYTES,
    conflict_message,
    holds_content,
    make_snapshot,
    not_read_message,
    sha256_bytes,
    short_diff,
    snapshot_is_for,
    unchanged_since,
)
from activities.files.common import MAX_LINE_CHARS
from core.contracts import ToolRequest, ToolResult
from core.tools.specs import WRITE_FILE, WriteFileArgs

__all__ = ["read_file", "write_file", "edit_file", "cancellable", "MAX_LINE_CHARS"]


def _summary(data: bytes) -> str:
    lines = count_lines(data)
    return f"{len(data)} bytes, {lines} line{'s' if lines != 1 else ''}"


@guarded
def write_file(request: ToolRequest, args: WriteFileArgs) -> ToolResult:
    """Create a file or replace its whole content, atomically, under the snapshot rule."""
    data = encode_text(args.content, "content")
    refuse_artifacts(args.path)
    with WorkspaceRoot(request.workspace_root) as ws:
        refuse_git_through_link(ws, args.path, "write_file")
    made = record_new_folders(request, args.path)  # rollback removes them too
    with WorkspaceRoot(request.workspace_root) as ws:
        loc, st = lookup(ws, args.path, create_parents=True)
        with loc:
            refuse_artifacts(loc.rel)  # reached through a symlink
            refuse_git_located(ws, loc, args.path, "write_file")  # a link swapped in since the check above
            result = _write_located(request, ws, loc, st, data)
    folders_made(request, made)
    return result


def _write_located(
    request: ToolRequest, ws: WorkspaceRoot, loc: Location, st: os.stat_result | None, data: bytes
) -> ToolResult:
    rel = loc.rel
    held = request.snapshot

    def ok(message: str, file_st: os.stat_result, **meta: str) -> ToolResult:
        return ToolResult.ok(
            request.call_id,
            request.tool,
            message,
            snapshot=make_snapshot(rel, file_st, sha256_bytes(data)),
            metadata={"path": rel, "bytes": str(len(data)), **meta},
        )

    if st is None:
        if loc.name == ".":
            raise Refusal(f"{rel} is a folder, not a file: give the path of a file inside it", kind="directory")
        written = recorded_write(request, loc, data, like=None, expect_absent=True)  # pre/post-images
        gone = " (it had been deleted since you read it)" if snapshot_is_for(ws, held, rel) else ""
        return ok(f"Created {rel} ({_summary(data)}){gone}.", written, created="true")

    refuse_non_regular(st, rel, WRITE_FILE)
    if not snapshot_is_for(ws, held, rel):
        if holds_content(loc, st, data):  # e.g. a retry of our own create
            return ok(f"{rel} already holds exactly this content ({_summary(data)}); nothing to write.",
                      st, idempotent_retry="true")
        raise Refusal(not_read_message(rel, held, "call write_file"), not_read="true")
    assert held is not None
    if not unchanged_since(loc, st, held):
        current = read_bytes(loc, WRITE_FILE)[0] if st.st_size <= MAX_DIFF_INPUT_BYTES else None
        if (current == data) if current is not None else holds_content(loc, st, data):
            # The rename happened but the result was lost: a retry.
            return ok(f"{rel} already holds exactly this content ({_summary(data)}); nothing to write.",
                      st, idempotent_retry="true")
        diff = (
            short_diff(current, data, wanted_label="content you tried to write")
            if current is not None
            else "(no diff shown: the file is too large to compare inline)"
        )
        raise Refusal(conflict_message(rel, held, st, diff), conflict="true")
    written = recorded_write(request, loc, data, like=st)  # pre/post-images
    return ok(f"Overwrote {rel} ({_summary(data)}; was {st.st_size} bytes).", written, created="false")


def cancellable(tool):  # type: ignore[no-untyped-def]
    """The sync tool as an async one that runs in a thread of its own and,
    when the activity is cancelled or times out, stops that thread (at its
    next chunk) and waits for it: no thread outlives its attempt. Use with
    ``tool_activity(name, cancellable(tool), in_thread=False)``."""

    async def run(request: ToolRequest, args):  # type: ignore[no-untyped-def]
        return await run_in_thread(tool, request, args, name=f"{request.tool} {request.call_id}")

    run.__name__ = getattr(tool, "__name__", "tool")
    return run

