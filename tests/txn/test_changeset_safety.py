"""Safe to apply, on real overlays: symlink escapes and writes
through symlinks are refused, files changed in the real workspace since the
command started are conflicts, and in every refusal nothing is applied. An
upper layer shaped by the command itself: only the overlay's own markers
count, and the scan stops at the changeset bounds instead of hashing or
listing whatever the command left."""

from __future__ import annotations

import os
import stat
import time

import pytest

from activities.txn import journal
from activities.txn import overlay
from activities.txn.changeset import read_only_refusal
from tests.txn.support.helpers import needs_overlay, run_captured, tree

pytestmark = needs_overlay

TURN, CALL = "turn-1", "call-1"


def journal_of(ws, script):
    cap, proc = run_captured(ws, script, TURN, CALL)
    assert proc.returncode == 0, proc.stderr
    return journal.write_journal(cap, overlay.scan(cap))


@pytest.mark.parametrize("script", [
    "ln -s /etc/passwd pw",
    "ln -s ../outside up",
    "mkdir -p in && ln -s .. in/up && ln -s in/up/.. esc",  # escapes only when links are followed
])
def test_symlink_pointing_outside_is_refused_and_nothing_applied(workspace, script):
    (workspace / "a.txt").write_text("a\n")
    before = tree(workspace)
    out = journal_of(workspace, "echo changed > a.txt && " + script)
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "refused", report.text()
    assert "points outside the workspace" in report.text()
    assert tree(workspace) == before  # not even the harmless a.txt change
    assert out.journal is not None


def test_write_through_a_symlink_planted_after_the_command_is_refused(workspace, tmp_path):
    (workspace / "sub").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    journal_of(workspace, "echo x > sub/new.txt")
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)  # a racing process swaps the folder for a link
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "refused" and "through a symlink" in report.text()
    assert os.listdir(outside) == []


def test_file_changed_while_the_command_ran_is_a_conflict_and_nothing_is_journaled(workspace):
    (workspace / "a.txt").write_text("a\n")
    cap, proc = run_captured(workspace, "echo more >> a.txt && echo new > b.txt", TURN, CALL)
    (workspace / "a.txt").write_text("edited by someone else\n")
    out = journal.write_journal(cap, overlay.scan(cap))
    assert out.journal is None and out.conflicts == ["a.txt: changed in the workspace while the command ran"]
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.NONE
    assert not (workspace / "b.txt").exists()


def test_file_changed_between_journal_and_apply_is_a_conflict_nothing_half_applied(workspace):
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    journal_of(workspace, "echo A > a.txt && echo B > b.txt && echo C > c.txt")
    (workspace / "b.txt").write_text("someone else\n")
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "conflict"
    assert report.conflicts[0].startswith("b.txt: file (13 bytes")
    assert (workspace / "a.txt").read_text() == "a\n" and not (workspace / "c.txt").exists()


def test_folder_deleted_by_the_command_that_gained_a_file_since_is_a_conflict(workspace):
    (workspace / "d").mkdir()
    (workspace / "d" / "old").write_text("o\n")
    journal_of(workspace, "rm -r d")
    (workspace / "d" / "added").write_text("new work\n")
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "conflict" and "added" in report.text()
    assert (workspace / "d" / "old").exists()


def test_setuid_bits_and_special_files_never_reach_the_workspace(workspace):
    out = journal_of(workspace, "echo '#!/bin/sh' > s.sh && chmod 4755 s.sh && mkfifo pipe")
    assert ("pipe", "fifo, socket or device file: not applied") in out.journal.changeset.skipped
    assert journal.apply_journal(str(workspace), TURN, CALL).ok
    assert stat.S_IMODE((workspace / "s.sh").stat().st_mode) == 0o755
    assert not (workspace / "pipe").exists()


def test_allowed_command_that_changed_files_is_not_applied(workspace):
    (workspace / "a.txt").write_text("a\n")
    cap, _ = run_captured(workspace, "cat a.txt && touch stray.txt && rm a.txt", TURN, CALL)
    scan = overlay.scan(cap)
    text = read_only_refusal("allow", scan.changeset)
    assert "create stray.txt" in text and "delete a.txt" in text
    cap.discard()
    assert tree(workspace) == {"a.txt": "a\n"}


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
