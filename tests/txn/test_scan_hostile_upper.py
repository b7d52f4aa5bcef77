"""An upper layer shaped by the command itself, on real overlays: only the
overlay's own markers count, and the scan stops at the changeset bounds
instead of hashing or listing whatever the command left."""

from __future__ import annotations

import os
import time

from activities.txn import overlay
from tests.txn.support.helpers import needs_overlay, run_captured

pytestmark = needs_overlay


def _actions(scan) -> dict[str, str]:
    return {c.path: c.action for c in scan.changeset.changes}


def test_an_opaque_marker_in_the_namespace_the_overlay_ignores_deletes_nothing(workspace):
    # As root the overlay keeps its markers in trusted.overlay.*; a user.*
    # xattr is the command's own data, and the merged view still held d/keep.
    (workspace / "d").mkdir()
    (workspace / "d" / "keep").write_text("k\n")
    cap, proc = run_captured(workspace, "touch d/new && python3 -c "
                             "'import os; os.setxattr(\"d\", \"user.overlay.opaque\", b\"y\")' && ls d")
    assert proc.returncode == 0, proc.stderr
    assert "keep" in proc.stdout  # the command saw the folder's old entries
    scan = overlay.scan(cap)
    cap.discard()
    assert _actions(scan) == {"d/new": "create"}


def test_a_huge_sparse_file_is_refused_by_size_before_it_is_hashed(workspace):
    cap, proc = run_captured(workspace, "truncate -s 1T big && echo x > small")
    assert proc.returncode == 0, proc.stderr
    t0 = time.monotonic()
    scan = overlay.scan(cap, max_bytes=2 << 30, max_entries=1000)
    cap.discard()
    assert time.monotonic() - t0 < 10
    assert "too large to apply" in scan.too_large and "2,147,483,648" in scan.too_large


def test_a_flood_of_paths_stops_the_scan_at_the_bound(workspace):
    cap, proc = run_captured(workspace, "mkdir m && cd m && seq 1 5000 | xargs touch")
    assert proc.returncode == 0, proc.stderr
    scan = overlay.scan(cap, max_bytes=0, max_entries=100)
    cap.discard()
    assert "changed paths (at most 100)" in scan.too_large
    assert len(scan.changeset.changes) <= 101


def test_within_the_bounds_nothing_is_refused(workspace):
    cap, proc = run_captured(workspace, "echo x > a")
    scan = overlay.scan(cap, max_bytes=10, max_entries=1)
    cap.discard()
    assert scan.too_large == "" and _actions(scan) == {"a": "create"}


def test_folders_nested_past_the_bound_are_refused_with_a_clear_error(workspace):
    # Deeper than the scan's recursion could follow (it raised RecursionError).
    cap, proc = run_captured(workspace, "i=0; while [ $i -lt 1200 ]; do mkdir a && cd a; i=$((i+1)); done; "
                                        "echo x > f")
    assert proc.returncode == 0, proc.stderr
    scan = overlay.scan(cap, max_bytes=0, max_entries=0)
    cap.discard()
    assert f"nested deeper than {overlay.MAX_SCAN_DEPTH} folders" in scan.too_large
    assert "nothing was applied" in scan.too_large


def test_layers_nested_past_the_recursion_limit_are_still_removed(tmp_path):
    # A command's upper layer is removed when it is refused or discarded.
    top = tmp_path / "upper"
    os.makedirs(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(2500):  # deeper than PATH_MAX as one path, too
        os.mkdir("a", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        parent, fd = fd, os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(parent)
    os.close(fd)
    overlay.remove_tree(str(top))
    assert not top.exists()
